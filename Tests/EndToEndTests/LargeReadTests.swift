import Foundation
@testable import API
import HTTPServer
import ModelStore
import Models
import Testing
import TestSupport

/// A list of more than `--large-read-elements` (200) elements is rendered on a
/// thread of its own, and one past `--large-read-bytes` (1 MiB) bytes is sent
/// a piece at a time: the same bytes, `ETag` and tracking as any answer.
@Suite struct LargeReadTests {
    /// A server with `games` games of 26 pairs (about 5 KB each).
    static func server(games: Int) throws -> TestServer {
        let server = try TestServer { $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1") }
        let client = server.client
        for seed in 0..<games {
            #expect(try client.post("/games", ["pairs": 26, "seed": .int(Int64(seed))]).status == 201)
        }
        return server
    }

    @Test func aLargeListIsTheBodyItsDeclarationRenders() throws {
        let server = try Self.server(games: 260)
        let client = server.client
        let state = server.application.store.snapshot.state
        for (path, whole) in [("/games", MemoryGame.games.list(in: state)),
                              ("/games?limit=1000&order=desc", MemoryGame.games.list(in: state, page: Page(limit: 1000, descending: true))),
                              ("/games?fields=isOver", MemoryGame.games.list(in: state, FieldSelection(names: ["isOver"])))] {
            let answer = try client.get(path)
            #expect(answer.status == 200, "\(path)")
            #expect(answer.body == whole.bytes, "\(path)")
            #expect(answer.header("ETag") == EntityTag.of(whole.bytes), "\(path)")
            #expect(answer.header("Content-Length") == String(whole.bytes.count), "\(path)")
        }
        #expect(server.application.api.largeReads.admitted == 3)
        // Past 1 MiB: sent a piece at a time, never kept whole.
        let whole = MemoryGame.games.list(in: state)
        #expect(whole.bytes.count > server.application.api.largeReads.keptWholeUpTo)
        let etag = try #require(client.get("/games").header("ETag"))
        let again = try client.get("/games", headers: ["If-None-Match": etag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        let head = try client.request("HEAD", "/games")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(whole.bytes.count))
        #expect(head.header("ETag") == etag)
        try waitUntil { server.application.daemon.bodyCount == 0 && server.application.api.largeReads.count == 0 }
    }

    /// The truck shows its orders: with more than `apartAbove` of them it
    /// is rendered apart, and is still the body its declaration renders.
    @Test func aSingletonWithManyElementsIsTheBodyItsDeclarationRenders() throws {
        let server = try TestServer { $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1") }
        let client = server.client
        for quantity in 1...(server.application.api.largeReads.apartAbove + 20) {
            #expect(try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(quantity))]).status == 201)
        }
        let state = server.application.store.snapshot.state
        let record = state[singleton: FoodTruck.truck]
        let before = server.application.api.largeReads.admitted
        for (path, pages) in [("/truck", [:]), ("/truck?orders.limit=10", ["orders": Page(limit: 10)])] {
            let whole = FoodTruck.truck.representation(of: record, in: state, pages: pages)
            let answer = try client.get(path)
            #expect(answer.status == 200, "\(path)")
            #expect(answer.body == whole.bytes, "\(path)")
            #expect(answer.header("ETag") == EntityTag.of(whole.bytes), "\(path)")
        }
        // The whole truck apart, its first page of ten orders not.
        #expect(server.application.api.largeReads.admitted == before + 1)
        try waitUntil { server.application.api.largeReads.count == 0 }
    }

    /// An observer that read a large list hears a change to one of its
    /// games, and a game added, as after any list read.
    @Test func anObserverOfALargeListHearsItsChanges() throws {
        let server = try Self.server(games: 230)
        let client = server.client
        let observer = try client.observer()
        let list = try client.get("/games", observer: observer)
        #expect(list.status == 200)
        #expect(list.body.count > server.application.api.largeReads.keptWholeUpTo)
        let cursor = try #require(list.header("Observation-Cursor"))
        let game = try #require(list.json["games"]?.arrayValue?[7]["id"]?.stringValue)
        let card = try #require(list.json["games"]?.arrayValue?[7]["cards"]?.arrayValue?[0]["id"]?.stringValue)
        #expect(try client.post("/games/\(game)/cards/\(card)/choose").status == 200)
        let changes = try client.changes(observer, since: Int64(cursor), timeout: 5)
        #expect(changes.status == 200)
        let paths = changes.json["changes"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? []
        #expect(paths.contains { $0.hasPrefix("/games/\(game)") }, "\(paths)")
    }

    /// A client has at most four large reads in progress: a fifth, while
    /// four bodies wait for it to read them, waits its turn, while another
    /// client is served; once the four are read, the fifth is answered.
    @Test func aClientHasAtMostFourLargeReadsInProgressAndTheNextWaitsItsTurn() throws {
        let server = try Self.server(games: 260)
        let reads = server.application.api.largeReads
        // From 127.0.0.2: not a trusted address.
        var holding: [(connection: RawConnection, length: Int)] = []
        for _ in 0..<4 {
            let connection = try RawConnection(port: server.port, receiveTimeout: 10, receiveBuffer: 16 * 1024, source: "127.0.0.2")
            try connection.send("GET /games HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try connection.receiveHead()
            #expect(head.status == 200)
            holding.append((connection, Int(head.headers["content-length"] ?? "") ?? 0))
        }
        try waitUntil { reads.count == 4 }
        let fifth = try RawConnection(port: server.port, receiveTimeout: 20, source: "127.0.0.2")
        try fifth.send("GET /games HTTP/1.1\r\nHost: x\r\n\r\n")
        try waitUntil { reads.waiting == 1 }
        let metrics = try server.client.get("/metrics").text
        #expect(metrics.contains("\nobservable_large_reads 4\n"), "\(metrics)")
        #expect(metrics.contains("\nobservable_large_reads_waiting 1\n"))
        #expect(metrics.contains("\nobservable_large_reads_total 4\n"))
        let other = try RawConnection(port: server.port, receiveTimeout: 10, source: "127.0.0.3")
        try other.send("GET /games HTTP/1.1\r\nHost: x\r\n\r\n")
        let served = try other.receive()
        #expect(served.status == 200)
        #expect(served.body.count == Int(served.headers["content-length"] ?? ""))
        #expect(reads.waiting == 1)
        // Read to the end, the four give their places back.
        for (connection, length) in holding {
            var body: [UInt8] = []
            while body.count < length { body += try connection.receiveBytes() }
            #expect(body.count == length)
            #expect(length > reads.keptWholeUpTo)
        }
        let answer = try fifth.receive()
        #expect(answer.status == 200)
        #expect(answer.body == served.body)
        try waitUntil { reads.count == 0 && reads.waiting == 0 }
    }
}

/// With both thresholds at 0, every list, query and truck read is a large
/// read sent a piece at a time: each answer is what a server with the
/// defaults gives, byte for byte, with the same tag.
@Suite struct EveryReadLargeTests {
    @Test func everyReadSentAPieceAtATimeIsTheAnswerOfBefore() throws {
        let trusted = try TrustedAddresses(parsing: "127.0.0.1")
        let small = try TestServer {
            $0.limits.largeReadElements = 0
            $0.limits.largeReadBytes = 0
            $0.http.trustedAddresses = trusted
        }
        let usual = try TestServer { $0.http.trustedAddresses = trusted }
        for server in [small, usual] {
            for quantity in 1...5 {
                #expect(try server.client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(quantity))]).status == 201)
            }
        }
        let paths = ["/truck", "/truck?orders.limit=2&orders.order=desc", "/truck/donuts", "/truck/donuts?fields=name",
                     "/truck/orders?limit=2", "/truck/orders?quantity=gte.3", "/truck/orders?sort=-quantity&limit=2", "/posts", "/jobs"]
        let before = small.application.api.largeReads.admitted
        for path in paths {
            let (a, b) = (try small.client.get(path), try usual.client.get(path))
            #expect(a.status == 200, "\(path)")
            // Orders have ids of their own on each server: compared without them.
            if path.hasPrefix("/truck/orders") || path.hasPrefix("/truck?") || path == "/truck" {
                let id = #"01[0-9a-f]{6}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"#
                let (x, y) = (a.text.replacingOccurrences(of: id, with: "id", options: .regularExpression),
                              b.text.replacingOccurrences(of: id, with: "id", options: .regularExpression))
                #expect(x == y, "\(path)")
                #expect(x.contains("\"quantity\""), "\(path)")
            } else {
                #expect(a.body == b.body, "\(path)")
                #expect(a.header("ETag") == b.header("ETag"), "\(path)")
            }
            #expect(a.header("Link") == nil || a.header("Link")?.isEmpty == false)
        }
        // All but the empty /posts and /jobs (no element: not more than 0).
        #expect(small.application.api.largeReads.admitted == before + paths.count - 2)
        try waitUntil { small.application.daemon.bodyCount == 0 && small.application.api.largeReads.count == 0 }
    }
}
