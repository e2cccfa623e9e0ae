import Foundation
import Testing
import TestSupport

@Suite struct ChangeFeedTests {
    @Test func longPollWithTimeoutOneAnswersEmptyAfterAboutASecond() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck/orderCount", observer: id)
        let start = Date()
        let poll = try client.changes(id, since: 0, timeout: 1)
        let elapsed = Date().timeIntervalSince(start)
        #expect(poll.status == 200)
        #expect(poll.json == ["cursor": 0, "changes": []])
        #expect(elapsed >= 0.95 && elapsed < 3, "answered after \(elapsed) s")
        #expect(try client.get("/metrics").text.contains(#"observable_http_requests_total{route="/observers/:id/changes",status="200"} 1"#))
    }

    @Test func parkedLongPollAnswersWhenAChangeItReadCommits() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: id).cursor)
        let connection = try TestConnection(port: server.port)
        try connection.send("GET", "/observers/\(id)/changes?since=\(cursor)&timeout=30")
        try server.waitUntil(parked: 1)
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 1"))
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        let answer = try connection.receive()
        #expect(answer.json.changeList == [["seq": 2, "path": "/truck/orderCount", "op": "set", "old": 0, "new": 1]])
        #expect(answer.json["cursor"] == 2)
    }

    @Test func sinceCanBeLeftOutAndContinuesFromTheLastAnswer() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/account", observer: id)
        _ = try client.post("/account/login", ["userName": "a"])
        #expect(try client.changes(id).json.changeList.count == 1)
        #expect(try client.changes(id).json.changeList.isEmpty)
        _ = try client.post("/account/login", ["userName": "b"])
        let next = try client.changes(id).json
        #expect(next.changeList.count == 1)
        #expect(next.changeList.first?["new"] == "b")
    }

    @Test func feedParametersAreValidated() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        for query in ["since=-1", "since=abc", "since=1.5", "since=5", "timeout=61", "timeout=-1", "timeout=x",
                      "limit=0", "limit=1001", "limit=x", "coalesce=maybe"]
        {
            let response = try client.get("/observers/\(id)/changes?\(query)")
            #expect(response.status == 400, "\(query)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try client.get("/observers/\(id)/changes?timeout=0&limit=1000&since=0&coalesce=true").status == 200)
        #expect(try client.get("/observers/nobody/changes?timeout=0").status == 404)
    }

    @Test func sinceOlderThanTheRetainedLogIsGone() throws {
        let server = try TestServer { $0.store.retainChanges = 3 }
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck", observer: id)
        for i in 0..<5 { _ = try client.patch("/truck", ["name": .string("Name \(i)")]) }
        let gone = try client.changes(id, since: 0)
        #expect(gone.status == 410)
        #expect(gone.header("Content-Type") == "application/problem+json")
        let recent = try client.changes(id, since: 2)
        #expect(recent.status == 200)
        #expect(recent.json.changeList.count == 3)
        // Re-read, then poll from the new cursor.
        let cursor = try #require(try client.get("/truck", observer: id).cursor)
        #expect(try client.changes(id, since: cursor).json == ["cursor": 5, "changes": []])
    }

    /// The log is bounded by bytes too: big changes push the oldest out
    /// however few are kept, a cursor before them is gone (or repaired),
    /// and a restart keeps within the bound as well.
    @Test func theLogKeepsWithinItsBytesAsWellAsItsEntries() throws {
        let folder = temporaryFolder()
        let bound = 4096
        var server: TestServer? = try TestServer(folder: folder) { $0.store.retainChangesBytes = bound }
        let client = server!.client
        let id = try client.observer()
        _ = try client.get("/truck", observer: id)
        let big = String(repeating: "x", count: 150)
        for i in 0..<20 { _ = try client.patch("/truck", ["name": .string(big + String(i))]) }
        // Each change of the name weighs some 450 bytes: about nine fit.
        let gone = try client.changes(id, since: 0)
        #expect(gone.status == 410)
        let oldest = try #require(gone.json["oldestRetainedSeq"]?.intValue)
        #expect(oldest > 10 && oldest < 20)
        #expect(try client.changes(id, since: oldest).json.changeList.count == 20 - Int(oldest))
        let repaired = try client.changes(id, since: 0, extra: "&repair=true")
        #expect(repaired.status == 200)
        #expect(repaired.json.changeList.first { $0["path"] == "/truck/name" }?["new"] == .string(big + "19"))
        server!.stop()
        server = nil
        let again = try TestServer(folder: folder) { $0.store.retainChangesBytes = bound }
        let goneAgain = try again.client.changes(id, since: 0)
        #expect(goneAgain.status == 410)
        #expect(try #require(goneAgain.json["oldestRetainedSeq"]?.intValue) >= oldest)
    }

    @Test func limitNeverSplitsATransaction() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck?fields=orders,orderCount", observer: id)
        for _ in 0..<3 { _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1]) }
        // Each order is one transaction of two changes: insert, then orderCount.
        let first = try client.changes(id, since: 0, extra: "&limit=1").json
        #expect(first.changeList.count == 2)
        #expect(first.changePaths == ["/truck/orders", "/truck/orderCount"])
        #expect(first["cursor"] == 2)
        let rest = try client.changes(id, since: 2, extra: "&limit=3").json
        #expect(rest.changeList.count == 4)
        #expect(rest["cursor"] == 6)
    }

    @Test func coalesceFoldsChangesOfOnePath() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck?fields=name,orderCount", observer: id)
        _ = try client.patch("/truck", ["name": "A"])
        _ = try client.patch("/truck", ["name": "B"])
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        _ = try client.patch("/truck", ["name": "C"])
        let folded = try client.changes(id, since: 0, extra: "&coalesce=true").json.changeList
        #expect(folded == [
            ["seq": 4, "path": "/truck/orderCount", "op": "set", "old": 0, "new": 1],
            ["seq": 5, "path": "/truck/name", "op": "set", "old": "Food Truck", "new": "C"],
        ])
        #expect(try client.changes(id, since: 0).json.changeList.count == 4)
    }

    @Test func writeBetweenReadAndFirstPollIsDeliveredAndOneShownInTheReadIsNot() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.patch("/truck", ["name": "Before"])  // seq 1, before the read
        let read = try client.get("/truck?fields=name", observer: id)
        #expect(read.json["name"] == "Before")
        let cursor = try #require(read.cursor)
        #expect(cursor == 1)
        _ = try client.patch("/truck", ["name": "After"])  // seq 2, between read and poll
        let changes = try client.changes(id, since: cursor).json.changeList
        #expect(changes == [["seq": 2, "path": "/truck/name", "op": "set", "old": "Before", "new": "After"]])
        // Even polling from before the read, the change the read showed is not repeated.
        #expect(try client.changes(id, since: 0).json.changeList == changes)
    }

    @Test func secondLongPollAnswersTheFirstEmpty() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck/orderCount", observer: id)
        let first = try TestConnection(port: server.port)
        try first.send("GET", "/observers/\(id)/changes?since=0&timeout=30")
        try server.waitUntil(parked: 1)
        let second = try TestConnection(port: server.port)
        try second.send("GET", "/observers/\(id)/changes?since=0&timeout=30")
        let displaced = try first.receive()
        #expect(displaced.json == ["cursor": 0, "changes": []])
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        #expect(try second.receive().json.changePaths == ["/truck/orderCount"])
    }

    @Test func fiveHundredParkedLongPollsAllAnswerWhenTheirChangeHappens() throws {
        let server = try TestServer()
        let client = server.client
        var connections: [TestConnection] = []
        for _ in 0..<500 {
            let id = try client.observer()
            _ = try client.get("/truck/orderCount", observer: id)
            let connection = try TestConnection(port: server.port, receiveTimeout: 20)
            try connection.send("GET", "/observers/\(id)/changes?since=0&timeout=30")
            connections.append(connection)
        }
        try server.waitUntil(parked: 500)
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 500"))
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        var answered = 0
        for connection in connections {
            let answer = try connection.receive()
            if answer.json.changeList == [["seq": 2, "path": "/truck/orderCount", "op": "set", "old": 0, "new": 1]] { answered += 1 }
        }
        #expect(answered == 500)
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 0"))
    }

    @Test func clientThatLeavesWhileParkedHoldsItsSlotNoLongerThanItsTimeout() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        do {
            let connection = try TestConnection(port: server.port)
            try connection.send("GET", "/observers/\(id)/changes?since=0&timeout=1")
            try server.waitUntil(parked: 1)
        }  // the connection closes here
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 1"))
        // Freed by its 1 s timeout, as if the client were still there.
        try server.waitUntil(parked: 0, timeout: 1.5)
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 0"))
        #expect(try client.changes(id, timeout: 0).status == 200)
    }

    @Test func deletingAnObserverAnswersItsParkedPoll() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        let connection = try TestConnection(port: server.port)
        try connection.send("GET", "/observers/\(id)/changes?timeout=30")
        try server.waitUntil(parked: 1)
        #expect(try client.delete("/observers/\(id)").status == 204)
        #expect(try connection.receive().status == 404)
    }

    @Test func stoppingTheServerAnswersParkedPollsWithTheirCursor() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.patch("/truck", ["name": "Renamed"])
        let connection = try TestConnection(port: server.port)
        try connection.send("GET", "/observers/\(id)/changes?timeout=30")
        try server.waitUntil(parked: 1)
        server.stop()
        let answer = try connection.receive()
        #expect(answer.status == 200)
        #expect(answer.json == ["cursor": 1, "changes": []])
    }
}
