import Dispatch
import Foundation
import ModelStore
@testable import Models
import Testing
import TestSupport

/// With `coalesce=true`, changes that fold away say nothing: a poll passes
/// over them, a long-poll goes on waiting, and every answer's cursor lets
/// the next poll go on without losing or repeating a change.
@Suite struct CoalescedFeedTests {
    /// The first dot of the grid, read in full by a new observer.
    static func observeDot(_ client: TestClient) throws -> (observer: String, dot: String, cursor: Int64) {
        let dot = try #require(try client.get("/grid").json["rows"]?.arrayValue?.first?.arrayValue?.first?["id"]?.stringValue)
        let observer = try client.observer()
        let cursor = try #require(try client.get("/grid/dots/\(dot)", observer: observer).cursor)
        return (observer, dot, cursor)
    }

    @Test func aCoalescedPageThatFoldsAwayIsPassedOverForTheChangesAfterIt() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck?fields=name", observer: id)
        _ = try client.patch("/truck", ["name": "A"])            // 1
        _ = try client.patch("/truck", ["name": "Food Truck"])   // 2: back where it started
        _ = try client.patch("/truck", ["name": "C"])            // 3
        let answer = try client.changes(id, since: 0, extra: "&coalesce=true&limit=2").json
        #expect(answer == ["cursor": 3, "changes": [["seq": 3, "path": "/truck/name", "op": "set", "old": "Food Truck", "new": "C"]]])
    }

    @Test func aLongPollWhoseChangesAllFoldAwayWaitsForAChangeThatRemains() throws {
        let server = try TestServer()
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck?fields=name", observer: id)
        _ = try client.patch("/truck", ["name": "A"])
        _ = try client.patch("/truck", ["name": "Food Truck"])
        let poll = try TestConnection(port: server.port)
        try poll.send("GET", "/observers/\(id)/changes?since=0&timeout=30&coalesce=true&limit=2")
        // Parked, not answered: the changes it found all fold away.
        try server.waitUntil(parked: 1)
        _ = try client.patch("/truck", ["name": "C"])
        let answer = try poll.receive().json
        #expect(answer == ["cursor": 3, "changes": [["seq": 3, "path": "/truck/name", "op": "set", "old": "Food Truck", "new": "C"]]])
    }

    /// Commits `writes` as one group, behind a commit held open meanwhile,
    /// so that they are published together.
    static func commitTogether(_ store: Store, _ writes: [PreparedWrite<Answer>]) {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let committed = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let holding = PreparedWrite<Void> { _ in
                entered.signal()
                gate.wait()
            }
            _ = store.submit(holding, wait: { true }, then: { _ in })
        }
        entered.wait()
        for write in writes {
            if store.submit(write, wait: { true }, then: { _ in committed.signal() }) != nil { committed.signal() }
        }
        gate.signal()
        for _ in writes { _ = committed.wait(timeout: .now() + 10) }
    }

    @Test func aParkedCoalescedPollWokenByChangesThatFoldAwayKeepsWaiting() throws {
        let server = try TestServer()
        let client = server.client
        let (id, dot, cursor) = try Self.observeDot(client)
        let poll = try TestConnection(port: server.port)
        try poll.send("GET", "/observers/\(id)/changes?since=\(cursor)&timeout=30&coalesce=true")
        try server.waitUntil(parked: 1)
        // isTapAnimated true, then false, published at once: nothing to say.
        Self.commitTogether(server.application.store, [DotGrid.set(dot, "isTapAnimated", true),
                                                       DotGrid.set(dot, "isTapAnimated", false)])
        #expect(try client.patch("/grid/dots/\(dot)", ["isRandomAnimated": true]).status == 200)
        let answer = try poll.receive().json
        #expect(answer == ["cursor": .int(cursor + 3), "changes": [
            ["seq": .int(cursor + 3), "path": .string("/grid/dots/\(dot)/isRandomAnimated"), "op": "set", "old": false, "new": true],
        ]])
    }

    @Test func anImmediatePollWhoseChangesAllFoldAwayAnswersEmptyWithACursorPastThem() throws {
        let server = try TestServer()
        let client = server.client
        let (id, dot, cursor) = try Self.observeDot(client)
        _ = try client.post("/grid/dots/\(dot)/tap")
        // The tap's two transactions, true then false, in one page.
        let empty = try client.changes(id, since: cursor, extra: "&coalesce=true&limit=2").json
        #expect(empty == ["cursor": .int(cursor + 2), "changes": []])
        _ = try client.patch("/grid/dots/\(dot)", ["isRandomAnimated": true])
        let next = try client.changes(id, since: cursor + 2, extra: "&coalesce=true&limit=1").json
        #expect(next.changeList.map { $0["seq"] } == [.int(cursor + 3)])
    }

    @Test func aLongPollWhoseChangesAllFoldAwayAnswersAtItsTimeoutWithACursorPastThem() throws {
        let server = try TestServer()
        let client = server.client
        let (id, dot, cursor) = try Self.observeDot(client)
        _ = try client.post("/grid/dots/\(dot)/tap")
        let start = Date()
        let answer = try client.changes(id, since: cursor, timeout: 0.5, extra: "&coalesce=true").json
        #expect(Date().timeIntervalSince(start) >= 0.45, "answered before its timeout")
        #expect(answer == ["cursor": .int(cursor + 2), "changes": []])
    }

    /// Polling page after page with a small `limit`: every answer but the
    /// last says something, cursors only move forward, no change is shown
    /// twice, and the values the answers carry end where the truck's name
    /// and the dot's fields end.
    @Test func coalescedPagesNeitherLoseNorRepeatChangesAndAnswerOnlyWithSomethingToSay() throws {
        let server = try TestServer()
        let client = server.client
        let (id, dot, start) = try Self.observeDot(client)
        _ = try client.get("/truck?fields=name", observer: id)
        let names = ["A", "Food Truck", "B", "C", "B", "D", "Food Truck", "E", "E2", "E"]
        for (index, name) in names.enumerated() {
            _ = try client.patch("/truck", ["name": .string(name)])
            if index % 3 == 0 { _ = try client.post("/grid/dots/\(dot)/tap") }
            if index == 5 { _ = try client.patch("/grid/dots/\(dot)", ["isRandomAnimated": true]) }
        }
        let last = try #require(try client.get("/truck").cursor)
        var values: [String: JSONValue] = ["/truck/name": "Food Truck", "/grid/dots/\(dot)/isTapAnimated": false,
                                           "/grid/dots/\(dot)/isRandomAnimated": false]
        var since = start
        var answers: [[JSONValue]] = []
        var seen = Set<Int64>()
        while since < last {
            let answer = try client.changes(id, since: since, extra: "&coalesce=true&limit=2").json
            let cursor = try #require(answer["cursor"]?.intValue)
            #expect(cursor > since)
            for change in answer.changeList {
                let seq = try #require(change["seq"]?.intValue)
                #expect(seq > since && seq <= cursor)
                #expect(seen.insert(seq).inserted, "seq \(seq) shown twice")
                let path = try #require(change["path"]?.stringValue)
                #expect(change["old"] == values[path], "\(path) at \(seq)")
                values[path] = change["new"]
            }
            answers.append(answer.changeList)
            since = cursor
        }
        #expect(answers.dropLast().allSatisfy { !$0.isEmpty }, "an answer with nothing to say came before the end")
        #expect(values["/truck/name"] == "E")
        #expect(values["/grid/dots/\(dot)/isTapAnimated"] == false)
        #expect(values["/grid/dots/\(dot)/isRandomAnimated"] == true)
    }
}
