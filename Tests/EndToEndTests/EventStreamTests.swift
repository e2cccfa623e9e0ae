import HTTPServer
import API
import Foundation
import Testing
import TestSupport

/// The change feed as Server-Sent Events, and repair past retention
/// (SPEC §2a), read off the wire by the tests' own SSE client.
@Suite struct EventStreamTests {
    static let order: JSONValue = ["donutId": .string(Seed.glazed), "quantity": 1]

    @Test func eachTransactionThatConcernsTheObserverIsOneEventWithItsSeqAsId() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: observer).cursor)
        let stream = try EventStreamClient(port: server.port, observer: observer, query: "since=\(cursor)")
        #expect(stream.head.status == 200)
        #expect(stream.head.headers["content-type"] == "text/event-stream")
        #expect(stream.head.headers["cache-control"] == "no-store")
        #expect(stream.head.headers["transfer-encoding"] == "chunked")
        #expect(stream.head.headers["connection"] == "close")
        #expect(stream.head.headers["date"]?.hasSuffix(" GMT") == true)
        _ = try client.patch("/truck/donuts/\(Seed.maple)", ["topping": "nuts"])  // read by nobody here
        _ = try client.post("/truck/orders", Self.order)
        _ = try client.post("/truck/orders", Self.order)
        let first = try #require(try stream.next())
        #expect(first.event == "changes")
        #expect(first.retry != nil)
        let changes = first.json.changeList
        #expect(changes.map { $0["path"] } == ["/truck/orderCount"])
        #expect(changes.first?["new"] == 1)
        #expect(first.id == changes.last?["seq"]?.intValue.map(String.init))
        #expect(first.json["cursor"]?.intValue.map(String.init) == first.id)
        let second = try #require(try stream.next())
        #expect(second.json.changeList.first?["new"] == 2)
        #expect(second.retry == nil)
        #expect(Int(second.id ?? "") ?? 0 > Int(first.id ?? "") ?? 0)
    }

    @Test func aReconnectWithLastEventIDMissesAndRepeatsNothingEvenAfterARestart() throws {
        let folder = temporaryFolder()
        var server: TestServer? = try TestServer(folder: folder)
        let observer = try server!.client.observer()
        _ = try server!.client.get("/truck/orderCount", observer: observer)
        var stream = try EventStreamClient(port: server!.port, observer: observer)
        _ = try server!.client.post("/truck/orders", Self.order)
        let first = try #require(try stream.next())
        #expect(first.json.changeList.first?["new"] == 1)
        // Gone while the client is away: two orders, one before a restart.
        _ = try server!.client.post("/truck/orders", Self.order)
        server!.stop()
        server = nil
        let again = try TestServer(folder: folder)
        _ = try again.client.post("/truck/orders", Self.order)
        stream = try EventStreamClient(port: again.port, observer: observer, lastEventID: first.id)
        #expect(try stream.newValues(count: 2) == [2, 3])
        // An EventSource opened with `since` asks that URL again when it
        // reconnects, with Last-Event-ID: the later of the two holds.
        let reconnected = try EventStreamClient(port: again.port, observer: observer, query: "since=0", lastEventID: first.id)
        #expect(try reconnected.next()?.json.changeList.first?["new"] == 2)
        let fromLater = try EventStreamClient(port: again.port, observer: observer, query: "since=\(first.id ?? "0")", lastEventID: "0")
        #expect(try fromLater.next()?.json.changeList.first?["new"] == 2)
    }

    @Test func aSilentStreamGetsAHeartbeatAndStopEndsItCleanly() throws {
        let server = try TestServer { $0.http.heartbeat = 1 }
        let observer = try server.client.observer()
        let stream = try EventStreamClient(port: server.port, observer: observer, receiveTimeout: 5)
        #expect(try stream.nextComment())  // ": observing …"
        let started = Date()
        #expect(try stream.nextComment())  // the heartbeat
        let waited = Date().timeIntervalSince(started)
        #expect(waited > 0.3 && waited < 4, "heartbeat after \(waited) s")
        #expect(try server.client.metric("observable_streams_open") == 1)
        server.stop()
        #expect(try stream.next() == nil)
        #expect(stream.ended)
    }

    @Test func aSecondConsumerEndsTheFirstAndDeletingTheObserverEndsItsStream() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: observer).cursor)
        let first = try EventStreamClient(port: server.port, observer: observer, query: "since=\(cursor)")
        try waitUntil(timeout: 5) { try client.metric("observable_streams_open") == 1 }
        let second = try EventStreamClient(port: server.port, observer: observer, query: "since=\(cursor)")
        #expect(try first.rest().isEmpty)
        _ = try client.post("/truck/orders", Self.order)
        #expect(try second.next()?.json.changeList.first?["new"] == 1)
        // A poll is a consumer too.
        #expect(try client.changes(observer, since: cursor).status == 200)
        #expect(try second.next() == nil)
        let third = try EventStreamClient(port: server.port, observer: observer, query: "since=\(cursor)")
        _ = try third.next()  // the order, again from that cursor
        #expect(try client.delete("/observers/\(observer)").status == 204)
        #expect(try third.next() == nil)
    }

    @Test func aResumePointPastRetentionIsAGoneEventOrARepair() throws {
        let server = try TestServer { $0.store.retainChanges = 3 }
        let client = server.client
        let observer = try client.observer()
        _ = try client.get("/truck/orderCount", observer: observer)
        _ = try client.get("/truck/donuts", observer: observer)
        for _ in 0..<4 { _ = try client.post("/truck/orders", Self.order) }
        let created = try client.post("/truck/donuts", ["name": "Cruller"])
        let cruller = try #require(created.json["id"]?.stringValue)
        _ = try client.delete("/truck/donuts/\(Seed.maple)")
        _ = try client.patch("/truck/donuts/\(Seed.glazed)", ["name": "Honey Glazed"])
        // Without repair: 410 names the oldest retained seq; a stream says `gone` and ends.
        let gone = try client.changes(observer, since: 0)
        #expect(gone.status == 410)
        #expect(gone.json["oldestRetainedSeq"]?.intValue != nil)
        #expect(gone.text.contains("repair=true"))
        let goneStream = try EventStreamClient(port: server.port, observer: observer, query: "since=0")
        #expect(goneStream.head.status == 200)
        let goneEvent = try #require(try goneStream.next())
        #expect(goneEvent.event == "gone")
        #expect(goneEvent.json["status"] == 410)
        #expect(try goneStream.next() == nil)
        // With repair: the current values, equal to a fresh read, at the current cursor.
        let repaired = try client.changes(observer, since: 0, extra: "&repair=true")
        #expect(repaired.status == 200)
        let fresh = try client.get("/truck/orderCount")
        #expect(repaired.json["cursor"]?.intValue == fresh.cursor)
        let changes = repaired.json.changeList
        let byPath = Dictionary(changes.filter { $0["op"] == "repair" }.map { ($0["path"]?.stringValue ?? "", $0["new"]) }, uniquingKeysWith: { a, _ in a })
        #expect(byPath["/truck/orderCount"] == fresh.json["orderCount"])
        // The donuts it read as a collection (a shape) come as the list a
        // fresh read shows: the new one in it, the deleted one gone, the
        // renamed one renamed.
        let donuts = try #require(byPath["/truck/donuts"]??.arrayValue)
        #expect(donuts == (try client.get("/truck/donuts").json["donuts"]?.arrayValue))
        #expect(donuts.contains { $0["id"]?.stringValue == cruller })
        #expect(!donuts.contains { $0["id"]?.stringValue == Seed.maple })
        #expect(donuts.contains { $0["id"]?.stringValue == Seed.glazed && $0["name"] == "Honey Glazed" })
        // From there, it is in step: the next poll answers nothing old.
        let next = try client.changes(observer, since: repaired.json["cursor"]?.intValue ?? 0)
        #expect(next.status == 200 && next.json.changeList.isEmpty)
        // A stream with repair=true starts with the repair.
        let stream = try EventStreamClient(port: server.port, observer: observer, query: "since=0&repair=true")
        let first = try #require(try stream.next())
        #expect(first.event == "changes")
        #expect(first.json.changeList.contains { $0["op"] == "repair" && $0["path"] == "/truck/orderCount" })
    }

    /// A stream's opening is finished as every answer is: with an allowed
    /// origin's CORS headers, and counted once; so is a long-poll's answer
    /// given when a change wakes it, with its `Preference-Applied`.
    @Test func aStreamsOpeningAndAWokenPollAreFinishedAsEveryAnswer() throws {
        let server = try TestServer { $0.access = AccessPolicy(corsOrigins: ["https://dash.example"]) }
        let client = server.client
        let origin = ["Origin": "https://dash.example"]
        let streamed = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: streamed).cursor)
        let stream = try EventStreamClient(port: server.port, observer: streamed, query: "since=\(cursor)", headers: origin)
        #expect(stream.head.status == 200)
        #expect(stream.head.headers["content-type"] == "text/event-stream")
        #expect(stream.head.headers["access-control-allow-origin"] == "https://dash.example")
        #expect(stream.head.headers["vary"] == "Origin")
        let polled = try client.observer()
        _ = try client.get("/truck/orderCount", observer: polled)
        let poll = try TestConnection(port: server.port)
        try poll.send("GET", "/observers/\(polled)/changes?since=\(cursor)", headers: origin.merging(["Prefer": "wait=30"]) { $1 })
        try server.waitUntil(parked: 1)
        _ = try client.post("/truck/orders", Self.order)
        let woken = try poll.receive()
        #expect(woken.json.changePaths == ["/truck/orderCount"])
        #expect(woken.header("Access-Control-Allow-Origin") == "https://dash.example")
        #expect(woken.header("Preference-Applied") == "wait=30")
        #expect(try stream.next()?.event == "changes")
        let metrics = try client.get("/metrics").text
        #expect(metrics.contains(#"observable_http_requests_total{route="/observers/:id/changes",status="200"} 2"#))
    }

    @Test func preferWaitIsTheTimeoutAndIsSaidToApply() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: observer).cursor)
        let started = Date()
        let answer = try client.request("GET", "/observers/\(observer)/changes?since=\(cursor)", headers: ["Prefer": "wait=1"])
        let waited = Date().timeIntervalSince(started)
        #expect(answer.status == 200)
        #expect(answer.header("Preference-Applied") == "wait=1")
        #expect(waited >= 0.9 && waited < 5)
        // Beyond the maximum, the maximum applies and is said.
        let capped = try client.request("GET", "/observers/\(observer)/changes?since=\(cursor)&timeout=0", headers: ["Prefer": "wait=600"])
        #expect(capped.header("Preference-Applied") == nil)
        let server2 = try TestServer { $0.limits.maxLongPoll = 1 }
        let other = try server2.client.observer()
        let limited = try server2.client.request("GET", "/observers/\(other)/changes", headers: ["Prefer": "respond-async, wait=600"])
        #expect(limited.header("Preference-Applied") == "wait=1")
    }

    /// An observer that read the order count, and its stream from there on
    /// a connection whose small receive buffer fills at once.
    private func slowStream(on server: TestServer) throws -> (observer: String, cursor: Int64, stream: EventStreamClient) {
        let observer = try server.client.observer()
        let cursor = try #require(try server.client.get("/truck/orderCount", observer: observer).cursor)
        let stream = try EventStreamClient(port: server.port, observer: observer, query: "since=\(cursor)", receiveBuffer: 2048)
        try waitUntil(timeout: 5) { try server.client.metric("observable_streams_open") == 1 }
        return (observer, cursor, stream)
    }

    @Test func aSlowClientIsSentNoMoreThanItTakesAndCatchesUp() throws {
        // 1,500 orders at once: a trusted client, past the write rate.
        let server = try TestServer { $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1") }
        let client = server.client
        let (_, _, slow) = try slowStream(on: server)
        let orders = 1500
        for _ in 0..<orders { _ = try client.post("/truck/orders", Self.order) }
        // Behind, and not cut while it takes what it is sent.
        let counts = try slow.newValues(count: orders)
        #expect(counts.count == orders && counts == (1...Int64(orders)).map { $0 }, "read \(counts.count) of \(orders) in order")
        _ = try client.post("/truck/orders", Self.order)
        #expect(try slow.next()?.json.changeList.first?["new"]?.intValue == Int64(orders + 1))
    }

    @Test func aClientThatTakesNothingForTheIdleTimeoutIsCutAndResumesWithNothingMissed() throws {
        let server = try TestServer {
            $0.http.idleTimeout = 1
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1")
        }
        let client = server.client
        let (observer, cursor, slow) = try slowStream(on: server)
        // Orders until the socket is full and the client, taking nothing, is cut.
        var orders = 0
        while orders < 20_000, try client.metric("observable_streams_open") == 1 {
            for _ in 0..<100 { _ = try client.post("/truck/orders", Self.order) }
            orders += 100
        }
        try waitUntil(timeout: 10) { try client.metric("observable_streams_open") == 0 }
        let read = try slow.rest()
        #expect(slow.ended)
        var counts = read.flatMap { $0.json.changeList.compactMap { $0["new"]?.intValue } }
        #expect(counts.count < orders, "read \(counts.count) of \(orders) before the cut")
        // It reconnects from its last whole event and misses and repeats nothing.
        let again = try EventStreamClient(port: server.port, observer: observer, lastEventID: read.last?.id ?? "\(cursor)")
        counts += try again.newValues(count: orders - counts.count)
        #expect(counts == (1...Int64(orders)).map { $0 }, "\(counts.count) of \(orders), in order")
    }

    @Test func anHTTP10ClientGetsTheEventsUnchunkedUntilTheClose() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let cursor = try #require(try client.get("/truck/orderCount", observer: observer).cursor)
        let connection = try RawConnection(port: server.port, receiveTimeout: 10)
        try connection.send("GET /observers/\(observer)/changes?since=\(cursor) HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n")
        let head = try connection.receiveHead()
        #expect(head.status == 200)
        #expect(head.headers["transfer-encoding"] == nil)
        #expect(head.headers["connection"] == "close")
        try waitUntil(timeout: 5) { try client.metric("observable_streams_open") == 1 }
        _ = try client.post("/truck/orders", Self.order)
        var text = ""
        while !text.contains("\n\nretry") && !text.contains("}\n\n") { text += String(decoding: try connection.receiveBytes(), as: UTF8.self) }
        #expect(text.hasPrefix(": observing \(observer)\n\n"))
        #expect(text.contains("event: changes\ndata: {\"cursor\":"))
        #expect(!text.contains("\r\n"))
        // A poll ends the stream: the server closes the connection.
        _ = try client.changes(observer, since: cursor)
        var closed = false
        while !closed {
            do { _ = try connection.receiveBytes() } catch TestHTTPError.io(let message) where message == "connection closed" { closed = true }
        }
        #expect(closed)
    }
}
