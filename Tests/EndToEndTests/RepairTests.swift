import Foundation
import HTTPServer
import Testing
import TestSupport

/// `repair=true` answers with the current value of every property the
/// observer reads, found from what it reads alone: each value is what a
/// fresh read of its resource shows, for a singleton, a computed property,
/// an element, a nested element; a membership is repaired with the
/// elements not seen; and a server with a large state does no more for it.
@Suite struct RepairTests {
    @Test func aRepairedValueIsWhatAFreshReadShows() throws {
        let server = try TestServer {
            $0.store.retainChanges = 3
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1")
        }
        let client = server.client
        let game = try #require(try client.post("/games", ["pairs": 2, "seed": 7]).json["id"]?.stringValue)
        let cards = try #require(try client.get("/games/\(game)").json["cards"]?.arrayValue?.compactMap { $0["id"]?.stringValue })
        let donut = try #require(try client.post("/truck/donuts", ["name": "Cruller"]).json["id"]?.stringValue)
        // Many elements the observer never reads.
        for seed in 0..<30 {
            let body: JSONValue = ["pairs": 26, "seed": .int(Int64(100 + seed))]
            #expect(try client.post("/games", body).status == 201)
        }

        let observer = try client.observer()
        for path in ["/truck?fields=name", "/truck/orderCount", "/truck/donuts/\(donut)", "/games/\(game)/cards/\(cards[0])",
                     "/games/\(game)?fields=isOver"] {
            #expect(try client.get(path, observer: observer).status == 200, "\(path)")
        }
        // Past retention: the truck renamed, the donut changed, a card chosen, an order placed.
        _ = try client.patch("/truck", ["name": "Repaired"])
        _ = try client.patch("/truck/donuts/\(donut)", ["glaze": "maple"])
        #expect(try client.post("/games/\(game)/cards/\(cards[0])/choose").status == 200)
        for _ in 0..<4 { #expect(try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 2]).status == 201) }
        #expect(try client.changes(observer, since: 0).status == 410)

        let repaired = try client.changes(observer, since: 0, extra: "&repair=true")
        #expect(repaired.status == 200)
        let changes = repaired.json.changeList
        #expect(!changes.isEmpty)
        var checked = 0
        for change in changes where change["op"] == "repair" {
            let path = try #require(change["path"]?.stringValue)
            let slash = try #require(path.lastIndex(of: "/"))
            let owner = String(path[..<slash]), name = String(path[path.index(after: slash)...])
            let fresh = owner == "/truck" && name == "orderCount" ? try client.get(path).json : try client.get(owner).json
            #expect(change["new"] == fresh[name], "\(path): \(String(describing: change["new"])) against \(String(describing: fresh[name]))")
            checked += 1
        }
        let paths = Set(changes.compactMap { $0["path"]?.stringValue })
        #expect(paths.isSuperset(of: ["/truck/name", "/truck/orderCount", "/truck/donuts/\(donut)/glaze", "/truck/donuts/\(donut)/name",
                                      "/games/\(game)/cards/\(cards[0])/isFaceUp", "/games/\(game)/isOver"]), "\(paths.sorted())")
        #expect(checked == changes.filter { $0["op"] == "repair" }.count && checked >= 6)
        // Nothing of the games it never read.
        #expect(paths.allSatisfy { !$0.hasPrefix("/games/") || $0.hasPrefix("/games/\(game)") }, "\(paths.sorted())")
    }
}
