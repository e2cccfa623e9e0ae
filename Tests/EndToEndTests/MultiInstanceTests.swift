import Foundation
import Testing
import Concurrency
import TestSupport

/// Three instances of the built server on one real PostgreSQL database, as
/// one service (SPEC §5): a client's requests go to any of them.
@Suite(.serialized) struct MultiInstanceTests {
    /// Three servers on a fresh database of the shared test PostgreSQL.
    static func cluster(_ count: Int = 3, database: String? = nil, arguments: [String] = []) throws -> [ServerProcess] {
        let url = try database ?? TestPostgres.freshDatabaseURL()
        let folder = temporaryFolder()
        return try (0..<count).map { _ in try ServerProcess(folder: folder, database: url, arguments: arguments) }
    }

    static let order: JSONValue = ["donutId": .string(Seed.glazed), "quantity": 1]

    @Test func aWriteThroughOneInstanceWakesAPollParkedOnAnother() throws {
        let servers = try Self.cluster()
        let (a, b, c) = (servers[0].client, servers[1].client, servers[2].client)
        let observer = try a.observer()
        let read = try b.get("/truck/orderCount", observer: observer)
        let cursor = try #require(read.cursor)
        let answer = Locked<(TestResponse?, Double)>((nil, 0))
        let poller = Thread {
            let started = Date()
            let response = try? c.changes(observer, since: cursor, timeout: 20)
            answer.withLock { $0 = (response, Date().timeIntervalSince(started)) }
        }
        poller.start()
        // Parked on C before the write: C's metrics show it.
        try waitUntil(timeout: 10) { (try? c.get("/metrics").text.contains("observable_longpolls_parked 1")) ?? false }
        #expect(try a.post("/truck/orders", Self.order).status == 201)
        try waitUntil(timeout: 10) { answer.withLock { $0.0 } != nil }
        let (response, seconds) = answer.withLock { $0 }
        let changes = try #require(response).json.changeList
        #expect(changes.map { $0["path"] } == ["/truck/orderCount"])
        #expect(changes.first?["new"] == 1)
        #expect(seconds < 10)
    }

    /// The cursor answered through one instance, by a poll with `since`
    /// or without, at once, woken or at its deadline, is where a poll
    /// without `since` through another goes on, and what each instance
    /// shows: a client whose requests go anywhere is told nothing twice.
    @Test func theCursorLastAnsweredThroughOneInstanceIsTheOneEveryInstanceGoesOnFrom() throws {
        let servers = try Self.cluster()
        let (a, b, c) = (servers[0].client, servers[1].client, servers[2].client)
        let observer = try a.observer()
        let since = try #require(try b.get("/truck/orderCount", observer: observer).cursor)
        for _ in 0..<3 { #expect(try c.post("/truck/orders", Self.order).status == 201) }
        let answered = try a.changes(observer, since: since).json
        #expect(answered.changeList.count == 3)
        let cursor = try #require(answered["cursor"]?.intValue)
        #expect(try b.changes(observer).json == ["cursor": .int(Int64(cursor)), "changes": []])
        #expect(try c.get("/observers/\(observer)").json["cursor"]?.intValue == cursor)

        // A replay through C moves it back to what C answered.
        let replay = try c.changes(observer, since: since, extra: "&limit=1").json
        #expect(replay.changeList.count == 1)
        #expect(try a.changes(observer).json.changeList.count == 2)

        // Woken on B by a write through C; then A goes on from B's answer.
        let parked = try TestConnection(port: servers[1].port)
        try parked.send("GET", "/observers/\(observer)/changes?since=\(cursor)&timeout=20")
        try b.waitUntil(parked: 1)
        #expect(try c.post("/truck/orders", Self.order).status == 201)
        let woken = try parked.receive().json
        #expect(woken.changeList.count == 1)
        #expect(try a.changes(observer).json == ["cursor": woken["cursor"]!, "changes": []])

        // At its deadline, past changes it did not read: its cursor moved on.
        let name = try c.patch("/truck", ["name": "Elsewhere"])
        #expect(name.status == 200)
        let expired = try b.changes(observer, since: Int64(try #require(woken["cursor"]?.intValue)), timeout: 0.2).json
        #expect(expired.changeList.isEmpty)
        #expect(try c.get("/observers/\(observer)").json["cursor"] == expired["cursor"])
    }

    /// A poll through another instance is the observer's consumer, as on
    /// one server: a stream of it open on A ends, even when the poll is
    /// answered at once, and moves the cursor no more.
    @Test func aPollThroughAnotherInstanceEndsAStreamOpenOnOne() throws {
        let servers = try Self.cluster(2)
        let (a, b) = (servers[0].client, servers[1].client)
        let observer = try a.observer()
        _ = try a.get("/truck/orderCount", observer: observer)
        let stream = try EventStreamClient(port: servers[0].port, observer: observer)
        #expect(try b.post("/truck/orders", Self.order).status == 201)
        let first = try #require(try stream.next())
        #expect(first.json.changeList.map { $0["new"] } == [1])
        // B has heard of the stream once its cursor shows it moved.
        let cursor = try #require(first.id.flatMap { Int64($0) })
        try waitUntil(timeout: 10) {
            let shown: Int64? = try? b.get("/observers/\(observer)").json["cursor"]?.intValue
            return shown == cursor
        }
        let answered = try b.changes(observer, since: 0).json
        #expect(answered.changeList.count == 1)
        #expect(try stream.rest().isEmpty)
        #expect(try b.post("/truck/orders", Self.order).status == 201)
        #expect(try a.get("/observers/\(observer)").json["cursor"] == answered["cursor"])
    }

    /// A poll through B sent the moment a stream opened on A (before B can
    /// have heard of it) is the newer consumer all the same: the stream
    /// ends, parked or delivering.
    @Test func aPollThroughAnotherInstanceAtOnceAfterAStreamOpensEndsIt() throws {
        let servers = try Self.cluster(2)
        let (a, b) = (servers[0].client, servers[1].client)
        for round in 1...20 {
            let observer = try a.observer()
            let cursor = try #require(try a.get("/truck/orderCount", observer: observer).cursor)
            // Half the rounds with a change waiting, which both answer.
            if round % 2 == 0 { #expect(try a.post("/truck/orders", Self.order).status == 201) }
            let stream = try EventStreamClient(port: servers[0].port, observer: observer, receiveTimeout: 5)
            let answered = try b.changes(observer, since: cursor, timeout: 0)
            #expect(answered.status == 200)
            #expect(answered.json.changeList.count == (round % 2 == 0 ? 1 : 0), "round \(round)")
            let events = Result { try stream.rest() }
            #expect((try? events.get()) != nil, "round \(round): the stream on A stayed open")
        }
    }

    /// A stream's cursor is saved before its event goes out, as a poll's is
    /// before its answer: a client that has the event and asks another
    /// instance at once finds the cursor there, and is told nothing twice.
    @Test func aStreamsCursorIsSavedBeforeItsEventGoesOut() throws {
        let servers = try Self.cluster(2)
        let (a, b) = (servers[0].client, servers[1].client)
        let observer = try a.observer()
        _ = try a.get("/truck/orderCount", observer: observer)
        let stream = try EventStreamClient(port: servers[0].port, observer: observer)
        for round in 1...20 {
            #expect(try b.post("/truck/orders", Self.order).status == 201)
            let event = try #require(try stream.next())
            #expect(event.json.changeList.map { $0["new"] } == [.int(Int64(round))])
            let id = try #require(event.id.flatMap { Int64($0) })
            let shown: Int64? = try b.get("/observers/\(observer)").json["cursor"]?.intValue
            #expect(shown == id, "round \(round)")
        }
    }

    @Test func oneObserverIsTheSameThroughEveryInstance() throws {
        let servers = try Self.cluster()
        let clients = servers.map(\.client)
        let observer = try clients[0].observer()
        _ = try clients[1].get("/truck/orderCount", observer: observer)
        _ = try clients[2].get("/truck?fields=name", observer: observer)
        // Its reads, tracked through B and C, show through A.
        let reads = try clients[0].get("/observers/\(observer)").json["reads"]
        #expect(reads == ["/truck/name", "/truck/orderCount"])
        // A write through C reaches it through B; an ETag is the same everywhere.
        _ = try clients[2].post("/truck/orders", Self.order)
        let changes = try clients[1].changes(observer, since: 0).json
        #expect(changes.changeList.map { $0["path"] } == ["/truck/orderCount"])
        let tags = try clients.map { try $0.get("/truck").header("ETag") }
        #expect(Set(tags).count == 1 && tags[0] != nil)
        // An If-Match checked on one instance holds against a write through another.
        let donut = try clients[0].get("/truck/donuts/\(Seed.maple)")
        let etag = try #require(donut.header("ETag"))
        #expect(try clients[1].patch("/truck/donuts/\(Seed.maple)", ["name": "Maple Long John"], headers: ["If-Match": etag]).status == 200)
        #expect(try clients[2].patch("/truck/donuts/\(Seed.maple)", ["name": "Lost update"], headers: ["If-Match": etag]).status == 412)
        // Deleted through C: its poll parked on A is answered 404 at once.
        let answer = Locked<TestResponse?>(nil)
        let poller = Thread {
            let response = try? clients[0].changes(observer, since: changes["cursor"]?.intValue ?? 0, timeout: 30)
            answer.withLock { $0 = response }
        }
        poller.start()
        try waitUntil(timeout: 10) { (try? clients[0].get("/metrics").text.contains("observable_longpolls_parked 1")) ?? false }
        #expect(try clients[2].delete("/observers/\(observer)").status == 204)
        try waitUntil(timeout: 5) { answer.withLock { $0 } != nil }
        #expect(answer.withLock { $0 }?.status == 404)
        #expect(try clients[1].get("/observers/\(observer)").status == 404)
    }

    /// One parked poll per observer, as on one server: a poll parked
    /// through B answers the one parked on A, with no changes at its cursor.
    @Test func aPollParkedOnOneInstanceGivesWayToOneParkedOnAnother() throws {
        let servers = try Self.cluster(2)
        let (a, b) = (servers[0].client, servers[1].client)
        let observer = try a.observer()
        let cursor = try #require(try a.get("/truck/orderCount", observer: observer).cursor)
        let first = Locked<TestResponse?>(nil), second = Locked<TestResponse?>(nil)
        Thread {
            let response = try? a.changes(observer, since: cursor, timeout: 30)
            first.withLock { $0 = response }
        }.start()
        try waitUntil(timeout: 10) { (try? a.get("/metrics").text.contains("observable_longpolls_parked 1")) ?? false }
        Thread {
            let response = try? b.changes(observer, since: cursor, timeout: 30)
            second.withLock { $0 = response }
        }.start()
        try waitUntil(timeout: 10) { first.withLock { $0 } != nil }
        let answer = try #require(first.withLock { $0 })
        #expect(answer.status == 200)
        #expect(answer.json.changeList.isEmpty)
        #expect(answer.json["cursor"] == .int(cursor))
        // The newer one, parked on B, gets the change.
        _ = try a.post("/truck/orders", Self.order)
        try waitUntil(timeout: 10) { second.withLock { $0 } != nil }
        #expect(second.withLock { $0 }?.json.changeList.map { $0["path"] } == ["/truck/orderCount"])
    }

    /// A stream open on one instance hears writes through the others, and
    /// gives way to a stream opened for its observer on another.
    @Test func aStreamOnOneInstanceHearsWritesThroughTheOthers() throws {
        let servers = try Self.cluster()
        let clients = servers.map(\.client)
        let observer = try clients[0].observer()
        let cursor = try #require(try clients[1].get("/truck/orderCount", observer: observer).cursor)
        let stream = try EventStreamClient(port: servers[2].port, observer: observer, query: "since=\(cursor)")
        #expect(stream.head.status == 200)
        for client in clients { #expect(try client.post("/truck/orders", Self.order).status == 201) }
        var counts: [Int64] = []
        while counts.count < 3, let event = try stream.next() {
            counts += event.json.changeList.compactMap { $0["new"]?.intValue }
        }
        #expect(counts == [1, 2, 3])
        // A newer stream on another instance is the observer's consumer now.
        let newer = try EventStreamClient(port: servers[0].port, observer: observer, lastEventID: "\(cursor)")
        #expect(try stream.rest().isEmpty)
        #expect(try newer.next()?.json.changeList.first?["new"] == 1)
    }

    /// A randomized check: one client hops between the instances at random
    /// for every request (reads, writes, polls); every change it polls for
    /// arrives once, in order, and nothing else.
    @Test(arguments: [1, 2, 3]) func requestsHoppingAtRandomMissAndRepeatNothing(seed: UInt64) throws {
        let servers = try Self.cluster()
        var random = ModelBasedTests.RandomSource(state: seed)
        func any() -> TestClient { servers[Int(random.next() % 3)].client }
        let observer = try any().observer()
        var cursor = try #require(try any().get("/truck/orderCount", observer: observer).cursor)
        _ = try any().get("/truck/donuts/\(Seed.glazed)?fields=name", observer: observer)
        var expectedCount: Int64 = 0
        var expectedName = "Glazed"
        var seenCount: Int64 = 0
        var seenName = "Glazed"
        for step in 0..<60 {
            switch random.next() % 4 {
            case 0, 1:
                #expect(try any().post("/truck/orders", Self.order).status == 201)
                expectedCount += 1
            case 2:
                expectedName = "Glazed \(step)"
                #expect(try any().patch("/truck/donuts/\(Seed.glazed)", ["name": .string(expectedName)]).status == 200)
            default:
                // A write nobody read: never delivered.
                #expect(try any().patch("/truck/donuts/\(Seed.maple)", ["topping": .string("t\(step)")]).status == 200)
            }
            if random.next() % 3 == 0 {
                let page = try any().changes(observer, since: cursor).json
                for change in page.changeList {
                    let seq = try #require(change["seq"]?.intValue)
                    #expect(seq > cursor)
                    switch change["path"]?.stringValue {
                    case "/truck/orderCount":
                        #expect(change["old"] == .int(seenCount))
                        seenCount += 1
                        #expect(change["new"] == .int(seenCount))
                    case "/truck/donuts/\(Seed.glazed)/name":
                        #expect(change["old"] == .string(seenName))
                        seenName = change["new"]?.stringValue ?? ""
                    default:
                        Issue.record("a change that was not read: \(change)")
                    }
                    cursor = seq
                }
                cursor = try #require(page["cursor"]?.intValue)
            }
        }
        let last = try any().changes(observer, since: cursor).json
        for change in last.changeList {
            if change["path"] == "/truck/orderCount" { seenCount += 1 } else { seenName = change["new"]?.stringValue ?? "" }
        }
        #expect(seenCount == expectedCount)
        #expect(seenName == expectedName)
    }

    /// Without `since`, a poll goes on from the cursor last answered, by
    /// whichever instance answered it: hopping repeats nothing.
    @Test func pollsWithoutSinceGoOnWhereTheLastAnswerLeftOffOnAnyInstance() throws {
        let servers = try Self.cluster()
        let clients = servers.map(\.client)
        let observer = try clients[0].observer()
        _ = try clients[0].get("/truck/orderCount", observer: observer)
        var seen: [Int64] = []
        for round in 0..<6 {
            #expect(try clients[(round + 1) % 3].post("/truck/orders", Self.order).status == 201)
            let page = try clients[round % 3].request("GET", "/observers/\(observer)/changes?timeout=0").json
            seen += page.changeList.compactMap { $0["new"]?.intValue }
        }
        #expect(seen == Array(1...6))
    }

    /// An instance cut off for longer than the journal is kept loads
    /// everything again: its reads then show what it missed, and a poll
    /// parked on it meanwhile is asked again.
    @Test func anInstanceThatMissedPrunedJournalLoadsEverythingAgain() throws {
        let url = try TestPostgres.freshDatabaseURL()
        let servers = try Self.cluster(2, database: url)
        let (a, b) = (servers[0].client, servers[1].client)
        let observer = try a.observer()
        let cursor = try #require(try b.get("/truck/orderCount", observer: observer).cursor)
        let parked = Locked<TestResponse?>(nil)
        Thread {
            let response = try? b.changes(observer, since: cursor, timeout: 30)
            parked.withLock { $0 = response }
        }.start()
        try waitUntil(timeout: 10) { (try? b.get("/metrics").text.contains("observable_longpolls_parked 1")) ?? false }
        // B is cut off (stopped) while A writes and the journal is pruned.
        try stopProcess(servers[1].process.processIdentifier)
        for _ in 0..<3 { #expect(try a.post("/truck/orders", Self.order).status == 201) }
        let created = try a.post("/truck/donuts", ["name": "Cruller"])
        let donut = try #require(created.json["id"]?.stringValue)
        _ = try PostgresConnection(url: url).integer("WITH gone AS (DELETE FROM observable_journal RETURNING 1) SELECT COUNT(*) FROM gone")
        kill(servers[1].process.processIdentifier, SIGCONT)
        #expect(try b.get("/truck/orderCount").json["orderCount"] == 3)
        #expect(try b.get("/truck/donuts/\(donut)").json["name"] == "Cruller")
        try waitUntil(timeout: 10) { parked.withLock { $0 } != nil }
        #expect(parked.withLock { $0 }?.json.changeList.last?["new"] == 3)
        #expect(servers[1].log.contains("loading everything again"))
        // And it follows the others again from there.
        _ = try a.post("/truck/orders", Self.order)
        #expect(try b.get("/truck/orderCount").json["orderCount"] == 4)
    }

    /// A stream is its observer's one consumer, and the newest: a poll
    /// parked on B while A is stopped gives way to a stream whose request
    /// waited for A meanwhile, whichever of the two A handles first once it
    /// goes on (the announcement, or the stream); the stream stays open.
    /// (`AnnouncementOrderTests` pins the order of announcements itself.)
    @Test func aStreamIsNotEndedByAnAnnouncementOlderThanItself() throws {
        let servers = try Self.cluster(2)
        let (a, b) = (servers[0].client, servers[1].client)
        for round in 0..<8 {
            let observer = try a.observer()
            _ = try a.get("/truck/orderCount", observer: observer)
            try stopProcess(servers[0].process.processIdentifier)
            let parked = Locked<TestResponse?>(nil)
            Thread {
                let response = try? b.changes(observer, timeout: 20)
                parked.withLock { $0 = response }
            }.start()
            try waitUntil(timeout: 10) { (try? b.get("/metrics").text.contains("observable_longpolls_parked 1")) ?? false }
            let connection = try RawConnection(port: servers[0].port, receiveTimeout: 10)
            try connection.send("GET /observers/\(observer)/changes HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
            kill(servers[0].process.processIdentifier, SIGCONT)
            let stream = try EventStreamClient(sentOn: connection)
            #expect(stream.head.status == 200)
            // The older poll gives way to the stream.
            try waitUntil(timeout: 10) { parked.withLock { $0 } != nil }
            #expect(parked.withLock { $0 }?.json.changeList.isEmpty == true, "round \(round)")
            _ = try b.post("/truck/orders", Self.order)
            let event = try stream.next()
            #expect(event?.json.changeList.first?["path"] == "/truck/orderCount", "round \(round): the stream ended")
        }
    }

    /// Instances that start together on a fresh database apply each
    /// migration once, under the advisory lock.
    @Test func instancesStartingTogetherMigrateOnce() throws {
        let url = try TestPostgres.freshDatabaseURL()
        let folder = temporaryFolder()
        let starters = (0..<3).map { _ in
            let server = Exclusive<Result<ServerProcess, any Error>?>(nil)
            let thread = Thread {
                let started = Result { try ServerProcess(folder: folder, database: url) }
                server.withLock { $0 = started }
            }
            thread.start()
            return server
        }
        try waitUntil(timeout: 60) { starters.allSatisfy { $0.withLock { $0 } != nil } }
        let servers = try starters.map { try #require($0.withLock { $0 }).get() }
        for server in servers { #expect(try server.client.get("/truck/orderCount").status == 200) }
        let migrations = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("migrations").path)
            .filter { $0.hasSuffix(".sql") && !$0.hasSuffix(".sqlite.sql") }
        // PostgreSQL's own variant and the file for both engines share a number.
        let versions = Set(migrations.map { $0.prefix(4) })
        let connection = try PostgresConnection(url: url)
        #expect(try connection.integer("SELECT COUNT(*) FROM schema_migrations") == Int64(versions.count))
        #expect(try connection.integer("SELECT COUNT(*) FROM donuts") == 4)
    }

    @Test func aJobIsAdvancedByOneInstanceEachStepOnceAndGoesOnWhenItDies() throws {
        let url = try TestPostgres.freshDatabaseURL()
        let servers = try Self.cluster(database: url, arguments: ["--min-job-interval", "10"])
        let observer = try servers[1].client.observer()
        let created = try servers[0].client.post("/jobs", ["total": 60, "step": 1, "intervalMs": 50])
        #expect(created.status == 201)
        let job = try #require(created.json["id"]?.stringValue)
        let read = try servers[1].client.get("/jobs/\(job)", observer: observer)
        var cursor = try #require(read.cursor)
        // The job may have taken a step before it was read: the feed goes on from there.
        let first = (read.json["progress"]?["current"]?.intValue ?? 0) + 1
        var progress: [Int64] = []
        var killed = false
        let deadline = Date().addingTimeInterval(60)
        while progress.last != 60 && Date() < deadline {
            let survivors = servers.filter { $0.process.isRunning }
            let page = try survivors[progress.count % survivors.count].client.changes(observer, since: cursor, timeout: 5).json
            for change in page.changeList where change["path"] == .string("/jobs/\(job)/progress") {
                if let current = change["new"]?["current"]?.intValue { progress.append(current) }
            }
            cursor = page["cursor"]?.intValue ?? cursor
            if !killed && progress.count >= 10 {
                // The instance that holds the jobs' claim is killed.
                let holder = try #require(try PostgresConnection(url: url).text(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.application_name LIKE 'observable-server jobs %'"))
                let pid = try #require(Int32(holder.split(separator: " ").last ?? ""))
                let server = try #require(servers.first { $0.process.processIdentifier == pid })
                server.stop(signal: SIGKILL)
                killed = true
            }
        }
        // Every step once, in order, through the instance that took over.
        #expect(first < 10 && progress == Array(first...60), "\(progress)")
    }
}

/// Faults with three instances: one killed mid-storm, the database
/// stopped and started under load.
@Suite(.serialized) struct MultiInstanceFaultTests {
    /// Writes from three clients, each on its own instance until that one
    /// fails, then on the next: the ids acknowledged.
    final class Storm: @unchecked Sendable {
        let acknowledged = Locked<[String]>([])
        let failures = Locked<[Int]>([])
        let stopping = Locked(false)
        let group = DispatchGroup()

        init(ports: [UInt16], writers: Int = 3) {
            for writer in 0..<writers {
                DispatchQueue.global().async(group: group) { [self] in
                    var target = writer % ports.count
                    var i = 0
                    while !stopping.withLock({ $0 }) {
                        i += 1
                        let client = TestClient(port: ports[target])
                        guard let response = try? client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(i % 9 + 1))]) else {
                            // Gone: retried on the next instance.
                            target = (target + 1) % ports.count
                            continue
                        }
                        if response.status == 201, let id = response.json["id"]?.stringValue {
                            acknowledged.withLock { $0.append(id) }
                        } else {
                            failures.withLock { $0.append(response.status) }
                            Thread.sleep(forTimeInterval: 0.02)
                        }
                    }
                }
            }
        }

        func stop() -> Bool {
            stopping.withLock { $0 = true }
            return group.wait(timeout: .now() + 30) == .success
        }
    }

    /// Follows `/truck/orderCount` for an observer, polling through the
    /// instances in turn and moving on when one fails: the counts it saw.
    final class Follower: @unchecked Sendable {
        let counts = Locked<[Int64]>([])
        let problems = Locked<[String]>([])
        let stopping = Locked(false)
        let done = DispatchSemaphore(value: 0)

        init(ports: [UInt16], observer: String, cursor: Int64) {
            Thread { [self] in
                var cursor = cursor
                var target = 0
                while !stopping.withLock({ $0 }) {
                    guard let response = try? TestClient(port: ports[target]).changes(observer, since: cursor, timeout: 1),
                          response.status == 200
                    else {
                        target = (target + 1) % ports.count
                        Thread.sleep(forTimeInterval: 0.02)
                        continue
                    }
                    let page = response.json
                    for change in page.changeList {
                        let seen = counts.withLock { $0.last ?? 0 }
                        if change["old"] != .int(seen) { problems.withLock { $0.append("\(change) after \(seen)") } }
                        counts.withLock { $0.append(change["new"]?.intValue ?? -1) }
                    }
                    cursor = page["cursor"]?.intValue ?? cursor
                    target = (target + 1) % ports.count
                }
                done.signal()
            }.start()
        }

        func stop() {
            stopping.withLock { $0 = true }
            done.wait()
        }
    }

    @Test func killNineOfOneInstanceMidStormLosesNothingAcknowledged() throws {
        let servers = try MultiInstanceTests.cluster()
        let ports = servers.map(\.port)
        let observer = try servers[0].client.observer()
        let cursor = try #require(try servers[1].client.get("/truck/orderCount", observer: observer).cursor)
        let follower = Follower(ports: ports, observer: observer, cursor: cursor)
        let storm = Storm(ports: ports)
        try waitUntil(timeout: 30) { storm.acknowledged.withLock { $0.count } >= 150 }
        servers[1].stop(signal: SIGKILL)
        let atKill = storm.acknowledged.withLock { $0.count }
        try waitUntil(timeout: 30) { storm.acknowledged.withLock { $0.count } >= atKill + 150 }
        #expect(storm.stop())
        let survivors = [servers[0], servers[2]]
        let acknowledged = storm.acknowledged.withLock { $0 }
        for server in survivors {
            let orders = try server.client.get("/truck/orders").json["orders"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            #expect(Set(acknowledged).isSubset(of: Set(orders)), "\(Set(acknowledged).subtracting(orders).count) acknowledged orders lost")
            #expect(try server.client.get("/truck/orderCount").json["orderCount"] == .int(Int64(orders.count)))
        }
        // The follower, moving on from the killed instance with its cursor, missed nothing.
        let total = Int64(try survivors[0].client.get("/truck/orders").json["orders"]?.arrayValue?.count ?? -1)
        try waitUntil(timeout: 15) { follower.counts.withLock { $0.last } == total }
        follower.stop()
        #expect(follower.problems.withLock { $0 }.isEmpty, "\(follower.problems.withLock { $0 })")
        #expect(follower.counts.withLock { $0 } == Array(1...total))
    }

    @Test func aDatabaseRestartUnderLoadIsSurvived() throws {
        let database = try PostgresServer()
        defer { database.shutdown() }
        let url = try database.createDatabase()
        let servers = try MultiInstanceTests.cluster(database: url)
        let clients = servers.map(\.client)
        let ports = servers.map(\.port)
        let observer = try clients[0].observer()
        let cursor = try #require(try clients[1].get("/truck/orderCount", observer: observer).cursor)
        // A poll parked on C before the outage, answered after it.
        let parked = Locked<TestResponse?>(nil)
        Thread {
            let response = try? clients[2].changes(observer, since: cursor, timeout: 50)
            parked.withLock { $0 = response }
        }.start()
        try waitUntil(timeout: 10) { (try? clients[2].get("/metrics").text.contains("observable_longpolls_parked 1")) ?? false }
        try database.stop()
        // While it is down: probes and writes are 503, writes with Retry-After.
        for client in clients {
            #expect(try client.get("/healthz").status == 503)
            let write = try client.post("/truck/orders", MultiInstanceTests.order)
            #expect(write.status == 503)
            #expect(write.header("Retry-After") != nil)
            #expect(write.header("Content-Type") == "application/problem+json")
        }
        let storm = Storm(ports: ports)
        // An instance started while the database is down waits for it.
        let late = Exclusive<Result<ServerProcess, any Error>?>(nil)
        Thread {
            let started = Result { try ServerProcess(folder: temporaryFolder(), database: url) }
            late.withLock { $0 = started }
        }.start()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(late.withLock { $0 } == nil)
        try database.start()
        for client in clients { try waitUntil(timeout: 30) { (try? client.get("/healthz").status) == 200 } }
        try waitUntil(timeout: 30) { storm.acknowledged.withLock { $0.count } >= 100 }
        #expect(storm.stop())
        try waitUntil(timeout: 10) { parked.withLock { $0 } != nil }
        let answer = try #require(parked.withLock { $0 })
        #expect(answer.status == 200)
        #expect(answer.json.changeList.first?["path"] == "/truck/orderCount")
        let acknowledged = storm.acknowledged.withLock { $0 }
        try waitUntil(timeout: 30) { late.withLock { $0 } != nil }
        let lateServer = try #require(late.withLock { $0 }).get()
        for client in clients + [lateServer.client] {
            let listed = try client.get("/truck/orders")
            #expect(listed.status == 200, "\(client.port): \(listed.status) \(listed.text)")
            let orders = listed.json["orders"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            #expect(Set(acknowledged).isSubset(of: Set(orders)), "\(client.port) misses \(Set(acknowledged).subtracting(orders)); logs: \((servers + [lateServer]).map { $0.log.suffix(3000) })")
            #expect(orders.count == acknowledged.count)
        }
    }
    /// A query by a computed field of the element alone (a game's `isOver`)
    /// is answered through an index every instance keeps as it applies the
    /// others' rows, its cards' included.
    @Test func aQueryByAComputedFieldThroughOneInstanceFindsWhatTheOthersWrote() throws {
        let servers = try MultiInstanceTests.cluster(2)
        let (a, b) = (servers[0].client, servers[1].client)
        let game = try MemoryTable(client: a, pairs: 1, seed: 3)
        func games(_ query: String) throws -> [String] {
            try b.get("/games?\(query)").json["games"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        try waitUntil(timeout: 10) { try b.get(game.path).status == 200 }
        #expect(try games("isOver=eq.false") == [game.id])
        #expect(try games("isOver=eq.true").isEmpty)
        let (first, second) = game.pair(0)
        _ = try game.choose(first)
        #expect(try game.choose(second).json["isOver"] == true)
        try waitUntil(timeout: 10) { try b.get(game.path).json["isOver"] == true }
        #expect(try games("isOver=eq.true") == [game.id])
        #expect(try games("isOver=eq.false").isEmpty)
    }

    /// A query read through one instance hears, through every instance,
    /// exactly what writes through the others do to its copy (SPEC §3d, §5):
    /// the donut that comes to match, the one that stops, nothing of a
    /// donut it does not hold; and a kill -9 of the instance it read
    /// through changes none of it.
    @Test func aQueryReadThroughOneInstanceHearsWritesThroughTheOthersExactly() throws {
        let servers = try MultiInstanceTests.cluster()
        let (a, b, c) = (servers[0].client, servers[1].client, servers[2].client)
        let observer = try a.observer()
        let cursor = try #require(try b.get("/truck/donuts?glaze=eq.sugar&fields=name", observer: observer).cursor)
        #expect(try c.patch("/truck/donuts/\(Seed.maple)", ["glaze": "sugar"]).status == 200)
        #expect(try a.patch("/truck/donuts/\(Seed.glazed)", ["glaze": "maple"]).status == 200)
        #expect(try c.patch("/truck/donuts/\(Seed.chocolate)", ["name": "Choc"]).status == 200)
        #expect(try a.patch("/truck/donuts/\(Seed.maple)", ["dough": "chocolate"]).status == 200)
        _ = servers[1].stop(signal: SIGKILL)
        for client in [a, c] {
            var heard: [JSONValue] = []
            try waitUntil(timeout: 10) {
                heard = try client.changes(observer, since: cursor).json.changeList
                return heard.count >= 2
            }
            #expect(heard.map { $0["op"] } == ["insert", "remove"], "\(heard)")
            #expect(heard.first?["new"] == ["id": .string(Seed.maple), "name": "Maple Bar"])
            #expect(heard.last?["old"] == ["id": .string(Seed.glazed), "name": "Glazed"])
            #expect(heard.allSatisfy { $0["query"] == "glaze=eq.sugar" })
        }
    }

    /// A large list (more than 200 elements, past 1 MiB) through another
    /// instance: the same bytes and tag as through the instance written
    /// to, sent a piece at a time after the read waited for the database,
    /// and its observer hears a change made through a third.
    @Test func aLargeListIsTheSameThroughEveryInstance() throws {
        let servers = try MultiInstanceTests.cluster(arguments: ["--trusted-addresses", "127.0.0.1"])
        let (a, b, c) = (servers[0].client, servers[1].client, servers[2].client)
        for seed in 0..<230 {
            #expect(try a.post("/games", ["pairs": 26, "seed": JSONValue.int(Int64(seed))]).status == 201)
        }
        let observer = try b.observer()
        let throughA = try a.get("/games")
        let throughB = try b.get("/games", observer: observer)
        #expect(throughA.status == 200 && throughB.status == 200)
        #expect(throughA.body.count > 1 << 20)
        #expect(throughB.body == throughA.body)
        #expect(throughB.header("ETag") == throughA.header("ETag"))
        let cursor = try #require(throughB.cursor)
        let game = try #require(throughB.json["games"]?.arrayValue?[200]["id"]?.stringValue)
        let card = try #require(throughB.json["games"]?.arrayValue?[200]["cards"]?.arrayValue?[3]["id"]?.stringValue)
        #expect(try c.post("/games/\(game)/cards/\(card)/choose").status == 200)
        let changes = try a.changes(observer, since: cursor, timeout: 10).json.changeList
        #expect(changes.contains { $0["path"]?.stringValue?.hasPrefix("/games/\(game)") == true }, "\(changes)")
    }
}
