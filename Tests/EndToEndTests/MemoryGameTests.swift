import Foundation
import TestSupport
import Testing

@Suite struct MemoryGameTests {
    @Test func pairsAreValidated() throws {
        let server = try TestServer()
        let client = server.client
        for body: JSONValue in [[:], ["pairs": 0], ["pairs": -1], ["pairs": 27], ["pairs": 4, "seed": 99_999_999_999_999_999_999.0]] {
            #expect(try client.post("/games", body).status == 422, "\(body)")
        }
        for body: JSONValue in [["pairs": "4"], ["pairs": 2.5], ["pairs": nil], ["pairs": 4, "seed": "x"], ["pairs": 4, "seed": 1.5],
                                ["pairs": 4, "theme": "halloween"]] {
            let response = try client.post("/games", body)
            #expect(response.status == 400, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try client.request("POST", "/games", body: []).status == 400)
        #expect(try client.get("/games").json == ["games": []])
        #expect(try client.get("/healthz").json["seq"] == 0)
    }

    @Test func aNewGameIsShuffledPairsFaceDown() throws {
        let server = try TestServer()
        let client = server.client
        let created = try client.post("/games", ["pairs": 26])
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(UUID(uuidString: id) != nil)
        #expect(created.header("Location") == "/games/\(id)")
        #expect(created.keyOrder?.keys == ["id", "cards", "isOver"])
        #expect(created.json["isOver"] == false)
        let cards = try #require(created.json["cards"]?.arrayValue)
        #expect(cards.count == 52)
        #expect(Set(cards.compactMap { $0["id"]?.stringValue }).count == 52)
        #expect(created.keyOrder?["cards"]?.elements?.allSatisfy { $0.keys == ["id", "content", "isFaceUp", "isMatched"] } == true)
        #expect(cards.allSatisfy { $0["isFaceUp"] == false && $0["isMatched"] == false })
        let counts = Dictionary(grouping: cards.compactMap { $0["content"]?.stringValue }, by: { $0 }).mapValues(\.count)
        #expect(counts.count == 26)
        #expect(counts.values.allSatisfy { $0 == 2 })

        #expect(try client.get("/games/\(id)").json == created.json)
        #expect(try client.get("/games").json == ["games": [created.json]])
        let card = cards[5]
        let cardID = try #require(card["id"]?.stringValue)
        #expect(try client.get("/games/\(id)/cards/\(cardID)").json == card)
        #expect(try client.get("/games/\(id)?fields=isOver").json == ["id": .string(id), "isOver": false])
        #expect(try client.get("/games/\(id)/cards/\(cardID)?fields=isFaceUp").json == ["id": .string(cardID), "isFaceUp": false])
        #expect(try client.post("/games", ["pairs": 1]).json["cards"]?.arrayValue?.count == 2)
    }

    @Test func aSeedDealsTheSameGameEveryTime() throws {
        let server = try TestServer()
        let client = server.client
        func contents(_ body: JSONValue) throws -> [String] {
            try client.post("/games", body).json["cards"]?.arrayValue?.compactMap { $0["content"]?.stringValue } ?? []
        }
        let first = try contents(["pairs": 8, "seed": 42])
        #expect(first.count == 16)
        #expect(try contents(["pairs": 8, "seed": 42]) == first)
        #expect(try contents(["pairs": 8, "seed": 43]) != first)
        #expect(try contents(["pairs": 8, "seed": -42]) == (try contents(["pairs": 8, "seed": -42])))
        // Seeds deal different contents and orders, not one fixed deal.
        let deals = try Set((0..<10).map { try contents(["pairs": 3, "seed": .int(Int64($0))]) })
        #expect(deals.count > 5)
    }

    @Test func choosingFollowsTheLecturesRules() throws {
        let server = try TestServer()
        let client = server.client
        let game = try MemoryTable(client: client, pairs: 3, seed: 7)
        let (a1, a2) = game.pair(0)
        let (b1, b2) = game.pair(1)
        let (c1, c2) = game.pair(2)
        let observer = try client.observer()
        var cursor = try #require(try client.get(game.path, observer: observer).cursor)
        func changes() throws -> [String] {
            let poll = try client.changes(observer, since: cursor).json
            cursor = poll["cursor"]?.intValue ?? cursor
            return poll.changeList.map { change in
                let path = change["path"]?.stringValue ?? ""
                let name = game.name(of: path)
                let old = change["old"]?.text ?? "-"
                let new = change["new"]?.text ?? "-"
                return "\(name) \(old)→\(new)"
            }
        }

        // None face up: the chosen card turns up.
        let answer = try game.choose(a1)
        #expect(answer.status == 200)
        #expect(answer.json["cards"]?.arrayValue?.first { $0["id"] == .string(a1) }?["isFaceUp"] == true)
        #expect(try changes() == ["\(a1).isFaceUp false→true"])
        // A face-up card: nothing.
        #expect(try game.choose(a1).status == 200)
        #expect(try changes() == [])
        // One face up, contents differ: the chosen turns up too, no match.
        _ = try game.choose(b1)
        #expect(try changes() == ["\(b1).isFaceUp false→true"])
        // Two unmatched face up: they turn down and the chosen turns up.
        _ = try game.choose(c1)
        #expect(try changes() == ["\(a1).isFaceUp true→false", "\(b1).isFaceUp true→false", "\(c1).isFaceUp false→true"])
        // One face up with the same content: both matched.
        _ = try game.choose(c2)
        #expect(try changes() == ["\(c1).isMatched false→true", "\(c2).isFaceUp false→true", "\(c2).isMatched false→true"])
        // A matched card: nothing.
        _ = try game.choose(c1)
        #expect(try changes() == [])
        // Matched cards stay up and do not count as face up.
        _ = try game.choose(a1)
        #expect(try changes() == ["\(a1).isFaceUp false→true"])
        _ = try game.choose(b2)
        #expect(try changes() == ["\(b2).isFaceUp false→true"])
        _ = try game.choose(a2)
        // (In the order of the cards on the table, which the deal decides.)
        #expect(Set(try changes()) == ["\(a1).isFaceUp true→false", "\(b2).isFaceUp true→false", "\(a2).isFaceUp false→true"])
        _ = try game.choose(a1)
        #expect(try changes() == ["\(a1).isFaceUp false→true", "\(a1).isMatched false→true", "\(a2).isMatched false→true"])
        _ = try game.choose(b1)
        #expect(try changes() == ["\(b1).isFaceUp false→true"])
        #expect(try client.get(game.path).json["isOver"] == false)

        // The last pair: isOver turns true in the same transaction.
        let last = try game.choose(b2)
        #expect(last.json["isOver"] == true)
        let poll = try client.changes(observer, since: cursor).json.changeList
        #expect(poll.map { game.name(of: $0["path"]?.stringValue ?? "") } == ["\(b1).isMatched", "\(b2).isFaceUp", "\(b2).isMatched", "isOver"])
        #expect(poll.last?["old"] == false && poll.last?["new"] == true)
        let seqs = poll.compactMap { $0["seq"]?.intValue }
        #expect(seqs == Array(seqs[0]..<(seqs[0] + 4)))
        let final = try client.get(game.path).json
        #expect(final["isOver"] == true)
        #expect(final["cards"]?.arrayValue?.allSatisfy { $0["isFaceUp"] == true && $0["isMatched"] == true } == true)
        // Choosing in a finished game changes nothing.
        _ = try game.choose(a1)
        #expect(try client.changes(observer, since: cursor + 4).json.changeList.isEmpty)
    }

    @Test func unknownGamesAndCardsAreNotFound() throws {
        let server = try TestServer()
        let client = server.client
        let game = try MemoryTable(client: client, pairs: 2, seed: 1)
        let card = game.pair(0).0
        let unknownCard = try client.post("\(game.path)/cards/no-such-card/choose")
        #expect(unknownCard.status == 404)
        #expect(unknownCard.header("Content-Type") == "application/problem+json")
        #expect(try client.post("/games/no-such-game/cards/\(card)/choose").status == 404)
        #expect(try client.get("\(game.path)/cards/no-such-card").status == 404)
        #expect(try client.get("/games/no-such-game/cards/\(card)").status == 404)
        #expect(try client.get("/games/no-such-game").status == 404)
        let other = try MemoryTable(client: client, pairs: 2, seed: 1)
        #expect(try client.post("\(other.path)/cards/\(card)/choose").status == 404)
        #expect(try client.post("\(game.path)/cards/\(card)/choose", ["card": 0]).status == 400)
        // Nothing was turned up, least of all "card 0".
        #expect(try client.get(game.path).json == game.created)
        #expect(try client.get(other.path).json == other.created)
    }

    @Test func readerOfOneCardIsNotWokenByChoosingAnother() throws {
        let server = try TestServer()
        let client = server.client
        let game = try MemoryTable(client: client, pairs: 3, seed: 11)
        let (a, _) = game.pair(0)
        let (b, _) = game.pair(1)
        let (c, _) = game.pair(2)
        let observer = try client.observer()
        let cursor = try #require(try client.get("\(game.path)/cards/\(a)?fields=isFaceUp", observer: observer).cursor)
        let overObserver = try client.observer()
        let overCursor = try #require(try client.get("\(game.path)?fields=isOver", observer: overObserver).cursor)
        _ = try game.choose(b)
        #expect(try client.changes(observer, since: cursor, timeout: 0.3).json.changeList.isEmpty)
        _ = try game.choose(c)
        #expect(try client.changes(observer, since: cursor, timeout: 0).json.changeList.isEmpty)
        _ = try game.choose(a)
        let changes = try client.changes(observer, since: cursor).json.changeList
        #expect(changes.map { $0.removingSeq } == [["path": .string("\(game.path)/cards/\(a)/isFaceUp"), "op": "set", "old": false, "new": true]])
        #expect(try client.get("/observers/\(observer)").json["reads"] == [.string("\(game.path)/cards/\(a)/isFaceUp")])
        // A match that does not end the game does not wake a reader of isOver.
        _ = try game.choose(game.pair(0).1)
        #expect(try client.get("\(game.path)/cards/\(a)").json["isMatched"] == true)
        #expect(try client.changes(overObserver, since: overCursor, timeout: 0.2).json.changeList.isEmpty)
    }

    @Test func deletingAGameRemovesItAndTellsItsReaders() throws {
        let server = try TestServer()
        let client = server.client
        let listObserver = try client.observer()
        _ = try client.get("/games", observer: listObserver)
        let game = try MemoryTable(client: client, pairs: 2, seed: 3)
        let card = game.pair(1).0
        let cardObserver = try client.observer()
        let cursor = try #require(try client.get("\(game.path)/cards/\(card)?fields=isMatched", observer: cardObserver).cursor)
        let etag = try #require(try client.get(game.path).header("ETag"))
        _ = try game.choose(card)
        #expect(try client.delete(game.path, headers: ["If-Match": etag]).status == 412)
        #expect(try client.delete(game.path).status == 204)
        #expect(try client.get(game.path).status == 404)
        #expect(try client.delete(game.path).status == 404)
        #expect(try client.post("\(game.path)/cards/\(card)/choose").status == 404)
        #expect(try client.get("/games").json == ["games": []])
        let removal = try client.changes(cardObserver, since: cursor).json.changeList
        #expect(removal.count == 1)
        #expect(removal.first?["path"] == "/games" && removal.first?["op"] == "remove")
        #expect(removal.first?["old"]?["id"] == .string(game.id))
        #expect(try client.changes(listObserver, since: 0).json.changeList.map { $0["op"] } == ["insert", "set", "remove"])
    }

    @Test func gamesSurviveARestart() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder)
        let game = try MemoryTable(client: first!.client, pairs: 2, seed: 5)
        _ = try game.choose(game.pair(0).0)
        _ = try game.choose(game.pair(0).1)
        _ = try game.choose(game.pair(1).0)
        let before = try first!.client.get(game.path).json
        first!.stop()
        first = nil

        let second = try TestServer(folder: folder)
        #expect(try second.client.get(game.path).json == before)
        let restarted = MemoryTable(client: second.client, created: before)
        let finished = try restarted.choose(game.pair(1).1)
        #expect(finished.json["isOver"] == true)
        let next = try second.client.post("/games", ["pairs": 2, "seed": 5]).json
        #expect(try second.client.get("/games").json["games"]?.arrayValue?.map { $0["id"] } == [.string(game.id), next["id"]])
    }
}

/// A game created through the API, with its cards grouped by content.
struct MemoryTable {
    let client: TestClient
    let created: JSONValue
    var id: String { created["id"]?.stringValue ?? "" }
    var path: String { "/games/\(id)" }
    /// Card ids by content, in the order the contents first appear.
    let pairs: [(String, String)]

    init(client: TestClient, pairs: Int, seed: Int64) throws {
        let response = try client.post("/games", ["pairs": .int(Int64(pairs)), "seed": .int(seed)])
        guard response.status == 201 else { throw TestHTTPError.io("cannot create game: \(response.text)") }
        self.init(client: client, created: response.json)
    }

    init(client: TestClient, created: JSONValue) {
        self.client = client
        self.created = created
        var order: [String] = []
        var ids: [String: [String]] = [:]
        for card in created["cards"]?.arrayValue ?? [] {
            let content = card["content"]?.stringValue ?? ""
            if ids[content] == nil { order.append(content) }
            ids[content, default: []].append(card["id"]?.stringValue ?? "")
        }
        self.pairs = order.map { (ids[$0]![0], ids[$0]![1]) }
    }

    func pair(_ index: Int) -> (String, String) { pairs[index] }

    @discardableResult
    func choose(_ card: String) throws -> TestResponse {
        try client.post("\(path)/cards/\(card)/choose")
    }

    /// `cardId.field` for a card's path, or the game's field name.
    func name(of path: String) -> String {
        let prefix = self.path + "/cards/"
        if path.hasPrefix(prefix) {
            return path.dropFirst(prefix.count).replacingOccurrences(of: "/", with: ".")
        }
        return String(path.dropFirst(self.path.count + 1))
    }
}

extension JSONValue {
    fileprivate var removingSeq: JSONValue {
        guard var object = objectValue else { return self }
        object["seq"] = nil
        return .object(object)
    }
}
