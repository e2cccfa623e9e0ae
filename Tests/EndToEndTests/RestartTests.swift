import Dispatch
import API
import Foundation
import HTTPServer
import ModelStore
import ModelStoreDatabases
import Models
import SQLiteStore
import Testing
import TestSupport

@Suite struct RestartTests {
    @Test func stateObserversReadsAndCursorsSurviveARestart() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder)
        let client = first!.client
        let id = try client.observer()
        _ = try client.get("/truck?fields=name,orderCount", observer: id)
        _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 2])
        _ = try client.patch("/truck", ["name": "Renamed"])
        #expect(try client.changes(id).json.changeList.count == 2)  // cursor moves to 3
        _ = try client.post("/account/login", ["userName": "ada"])
        first!.stop()
        first = nil

        let second = try TestServer(folder: folder)
        let again = second.client
        let truck = try again.get("/truck").json
        #expect(truck["name"] == "Renamed")
        #expect(truck["orderCount"] == 1)
        #expect(try again.get("/account").json["userName"] == "ada")
        let observer = try again.get("/observers/\(id)").json
        #expect(observer["reads"] == ["/truck/name", "/truck/orderCount"])
        #expect(observer["cursor"] == 3)
        // The change log survived: polling from the start replays it.
        #expect(try again.changes(id, since: 0).json.changePaths == ["/truck/orderCount", "/truck/name"])
        // The implicit cursor continues where it was; new changes still arrive.
        _ = try again.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
        let next = try again.changes(id).json
        #expect(next.changeList == [["seq": 6, "path": "/truck/orderCount", "op": "set", "old": 1, "new": 2]])
    }

    /// The cursor a poll answers is where the next poll without `since`
    /// goes on, whether the answered poll named `since` or not, parked or
    /// not, and a clean stop keeps it: nothing told is told again.
    @Test func theCursorLastAnsweredSurvivesACleanStop() throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder)
        let client = server.client
        let observer = try client.observer()
        let created = try #require(try client.get("/observers/\(observer)").json["cursor"]?.intValue)
        _ = try client.get("/truck/orderCount", observer: observer)
        for _ in 0..<3 { #expect(try client.post("/truck/orders", MultiInstanceTests.order).status == 201) }
        let answered = try client.changes(observer, since: Int64(created)).json
        #expect(answered.changeList.count == 3)
        let cursor = try #require(answered["cursor"]?.intValue)
        #expect(server.stop() == 0)

        let restarted = try ServerProcess(folder: folder)
        let again = restarted.client
        #expect(try again.get("/observers/\(observer)").json["cursor"]?.intValue == cursor)
        #expect(try again.changes(observer).json.changeList.isEmpty)
        // A parked poll with `since`, woken by a change: its answer's cursor too.
        let parked = try TestConnection(port: restarted.port)
        try parked.send("GET", "/observers/\(observer)/changes?since=\(cursor)&timeout=20")
        try again.waitUntil(parked: 1)
        #expect(try again.post("/truck/orders", MultiInstanceTests.order).status == 201)
        let woken = try parked.receive().json
        #expect(woken.changeList.count == 1)
        let last = try #require(woken["cursor"]?.intValue)
        #expect(restarted.stop() == 0)

        let third = try ServerProcess(folder: folder)
        #expect(try third.client.get("/observers/\(observer)").json["cursor"]?.intValue == last)
        #expect(try third.client.changes(observer).json.changeList.isEmpty)
    }

    /// An observer of a collection has read the elements inserted later
    /// (SPEC 3a), and still has after a restart; one that did not read the
    /// collection, or was deleted, gained nothing.
    @Test func readsImpliedByInsertsSurviveARestart() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder)
        let client = first!.client
        let reader = try client.observer()
        let bystander = try client.observer()
        let deleted = try client.observer()
        _ = try client.get("/truck/donuts", observer: reader)
        _ = try client.get("/truck/donuts", observer: deleted)
        _ = try client.get("/truck?fields=name", observer: bystander)
        #expect(try client.delete("/observers/\(deleted)").status == 204)
        let created = try client.post("/truck/donuts", ["name": "Cruller"])
        let donut = try #require(created.json["id"]?.stringValue)
        let cursor = try #require(try client.changes(reader, since: 0).json["cursor"]?.intValue)
        first!.stop()
        first = nil

        let second = try TestServer(folder: folder)
        let again = second.client
        let reads = try again.get("/observers/\(reader)").json["reads"]?.arrayValue ?? []
        #expect(reads.contains(.string("/truck/donuts/\(donut)/name")))
        #expect(try again.get("/observers/\(bystander)").json["reads"] == ["/truck/name"])
        _ = try again.patch("/truck/donuts/\(donut)", ["name": "French Cruller"])
        let changes = try again.changes(reader, since: Int64(cursor)).json
        #expect(changes.changeList.map { $0["path"] } == [.string("/truck/donuts/\(donut)/name")])
        #expect(try again.changes(bystander, since: Int64(cursor)).json.changeList.isEmpty)
        // Stored: the reader's read of the collection, one shape whatever
        // it inserts later, and nothing of the new donut on its own; none
        // of the deleted observer (on SQLite its earlier read may stay, in
        // a batch, until compacted).
        let donutPaths = { (observer: String) in
            try TestEngine.storedReadPaths(of: observer, folder: folder).filter { $0.hasPrefix("/truck/donuts") }
        }
        let readerPaths = try donutPaths(reader)
        #expect(readerPaths == ["/truck/donuts?shape"])
        if TestEngine.isPostgres { #expect(try donutPaths(deleted) == []) }
        if TestEngine.isPostgres { #expect(try TestEngine.storedReadPaths(of: deleted, folder: folder) == []) }
    }

    @Test func acknowledgedWritesSurviveKillNine() throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder)
        let client = server.client
        let id = try client.observer()
        _ = try client.get("/truck/orderCount", observer: id)
        var acknowledged: [String] = []
        for i in 0..<40 {
            let response = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": .int(Int64(i % 9 + 1))])
            #expect(response.status == 201)
            if let orderID = response.json["id"]?.stringValue { acknowledged.append(orderID) }
        }
        server.stop(signal: SIGKILL)

        let restarted = try ServerProcess(folder: folder)
        let orders = try restarted.client.get("/truck/orders").json["orders"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
        #expect(orders == acknowledged)
        #expect(try restarted.client.get("/truck/orderCount").json["orderCount"] == 40)
        let changes = try restarted.client.changes(id, since: 0, extra: "&limit=1000").json
        #expect(changes.changeList.count == 40)
        #expect(changes.changeList.last?["new"] == 40)
        #expect(restarted.stop() == 0)
        #expect(try TestEngine.integrityCheck(folder: folder) == "ok")
    }

    /// Reads answered are kept through a `kill -9` (on SQLite they wait in
    /// the read journal beside the database), the reads an insert implied
    /// with them, and a clear of reads stays cleared.
    @Test func answeredReadsSurviveKillNine() throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder)
        let client = server.client
        let reader = try client.observer()
        let collector = try client.observer()
        let cleared = try client.observer()
        #expect(try client.get("/truck?fields=name", observer: reader).status == 200)
        #expect(try client.get("/truck/donuts", observer: collector).status == 200)
        #expect(try client.get("/truck?fields=name,orderCount", observer: cleared).status == 200)
        #expect(try client.delete("/observers/\(cleared)/reads").status == 204)
        #expect(try client.get("/truck/orderCount", observer: cleared).status == 200)
        let created = try client.post("/truck/donuts", ["name": "Cruller"])
        let donut = try #require(created.json["id"]?.stringValue)
        if !TestEngine.isPostgres {
            #expect(FileManager.default.fileExists(atPath: folder + "/observable.sqlite-reads-1"))
        }
        server.stop(signal: SIGKILL)

        let restarted = try ServerProcess(folder: folder)
        let again = restarted.client
        #expect(try again.get("/observers/\(reader)").json["reads"] == ["/truck/name"])
        #expect(try again.get("/observers/\(cleared)").json["reads"] == ["/truck/orderCount"])
        let reads = try again.get("/observers/\(collector)").json["reads"]?.arrayValue ?? []
        #expect(reads.contains(.string("/truck/donuts/\(donut)/name")))
        let cursor = try #require(try again.changes(reader, since: 0).json["cursor"]?.intValue)
        _ = try again.patch("/truck", ["name": "Renamed"])
        _ = try again.patch("/truck/donuts/\(donut)", ["name": "French Cruller"])
        #expect(try again.changes(reader, since: Int64(cursor)).json.changePaths == ["/truck/name"])
        #expect(try again.changes(collector, since: Int64(cursor)).json.changePaths == ["/truck/donuts/\(donut)/name"])
        #expect(try again.changes(cleared, since: Int64(cursor)).json.changeList.isEmpty)
        #expect(restarted.stop() == 0)
        // A clean stop stores the journal's reads in the database and removes it.
        #expect(!FileManager.default.fileExists(atPath: folder + "/observable.sqlite-reads-1"))
        #expect(try TestEngine.integrityCheck(folder: folder) == "ok")
    }

    @Test func sigtermAnswersParkedLongPollsAndExitsZero() throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder)
        let client = server.client
        let id = try client.observer()
        _ = try client.patch("/truck", ["name": "Before Stop"])
        let connection = try TestConnection(port: server.port)
        try connection.send("GET", "/observers/\(id)/changes?timeout=60")
        try client.waitUntil(parked: 1)
        let start = Date()
        #expect(server.stop(signal: SIGTERM) == 0)
        #expect(Date().timeIntervalSince(start) < 5)
        let answer = try connection.receive()
        #expect(answer.status == 200)
        #expect(answer.json == ["cursor": 1, "changes": []])
        #expect(server.log.contains("stopped"))
    }

    /// A SIGTERM that arrives while the server is still opening its database
    /// and binding its port is not lost: the server stops as soon as it can, with 0.
    /// `listening` sends it at once after the server says it listens, which is
    /// when a supervisor that waits for that line stops it.
    @Test(arguments: [("starting", 0.0), ("starting", 0.003), ("starting", 0.01), ("starting", 0.03),
                      ("listening on", 0.0), ("listening on", 0.0), ("listening on", 0.0), ("listening on", 0.001)])
    func sigtermWhileStartingStopsTheServerWithZero(marker: String, delay: Double) throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder, waitingFor: marker)
        // The delay is the case under test: a signal at that moment of the start.
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        let status = server.stop(signal: SIGTERM, within: 10)
        #expect(status == 0, "log: \(server.log)")
        #expect(server.process.terminationReason == .exit)
        #expect(server.log.contains("SIGTERM received"))
    }

    /// While a stop waits for a request in flight, a new connection is
    /// refused, and the request in flight is still answered.
    @Test func aStoppingServerRefusesNewConnectionsAndFinishesTheRequestInFlight() throws {
        let server = try TestServer()
        let port = server.port
        // A request in flight: its head and half of its body. The server
        // asks for the body (100 Continue) once it has taken the request in.
        let body = Array(#"{"donutId":"\#(Seed.glazed)","quantity":3}"#.utf8)
        let slow = try TestConnection(port: port)
        try slow.sendRaw(Array(("POST /truck/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
                                + "Expect: 100-continue\r\n\r\n").utf8))
        #expect(try slow.receive(method: "POST").status == 100)
        try slow.sendRaw(Array(body.prefix(10)))
        let application = server.application
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            application.stop()
            stopped.signal()
        }
        try waitUntil { application.daemon.isStopping }
        #expect(throws: (any Error).self) { try TestConnection(port: port, receiveTimeout: 2).request("GET", "/healthz") }
        try slow.sendRaw(Array(body.dropFirst(10)))
        let answer = try slow.receive(method: "POST")
        #expect(answer.status == 201)
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }

    /// Nothing keeps a stopped application alive: an embedding program can
    /// start and stop servers without leaking one store, daemon or feed each.
    @Test func aStoppedApplicationIsReleased() throws {
        weak var application: API.Application?
        weak var store: ModelStore.Store?
        weak var daemon: HTTPServer.HTTPDaemon?
        try {
            let server = try TestServer()
            let client = server.client
            let id = try client.observer()
            _ = try client.get("/truck/orderCount", observer: id)
            _ = try client.post("/truck/orders", ["donutId": .string(Seed.glazed), "quantity": 1])
            #expect(try client.changes(id, since: 0).json.changeList.count == 1)
            application = server.application
            store = server.application.store
            daemon = server.application.daemon
            server.stop()
        }()
        #expect(application == nil)
        #expect(store == nil)
        #expect(daemon == nil)
    }

    /// The migrations are built in: the command finds none on disk, as it
    /// runs in an empty folder.
    @Test func migrateCommandAppliesTheBuiltInMigrationsAndExits() throws {
        let folder = temporaryFolder()
        let process = Process()
        process.executableURL = ServerProcess.executable
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.arguments = ["migrate", "--database", folder + "/m.sqlite"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.contains("0001_init"))
        let database = try SQLiteStore.Database(path: folder + "/m.sqlite")
        #expect(try database.rows("SELECT COUNT(*) FROM donuts").first?[0].int64 == 4)
        #expect(try database.rows("SELECT version FROM schema_migrations").first?[0].int64 == 1)
        let files = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("migrations").path)
        #expect(try database.rows("SELECT COUNT(*) FROM schema_migrations").first?[0].int64 == Int64(files.filter { $0.hasSuffix(".sql") && !$0.hasSuffix(".postgres.sql") }.count))
    }

    /// A database migrated by the repository's SQLite migrations before
    /// `version` (`count` of them), with `sql` run on it, then by the built
    /// server's `migrate`: its path.
    static func migrated(before version: String, applying count: Int, then sql: String) throws -> String {
        let path = temporaryFolder() + "/m.sqlite"
        let migrations = repositoryRoot.appendingPathComponent("migrations")
        let before = try FileManager.default.contentsOfDirectory(atPath: migrations.path)
            .filter { $0.hasSuffix(".sql") && !$0.hasSuffix(".postgres.sql") && $0 < version }
            .map { ($0, try String(contentsOf: migrations.appendingPathComponent($0), encoding: .utf8)) }
        #expect(try Store.migrate(database: path, catalog: Catalog(resources: [], migrations: before)).count == count)
        let database = try SQLiteStore.Database(path: path)
        try database.execute(sql)
        database.close()
        let process = Process()
        process.executableURL = ServerProcess.executable
        process.arguments = ["migrate", "--database", path]
        process.standardOutput = Pipe()
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return path
    }

    /// 0008 stores a read a row: the reads stored a key a row before it
    /// become one row for each observer and seq, and the server started on
    /// them knows every key its observer read.
    @Test func readsStoredAKeyARowAreGroupedByTheirRead() throws {
        let path = try Self.migrated(before: "0008", applying: 3, then: """
            INSERT INTO observers (id, cursor, ttl_seconds, last_used) VALUES ('o', 0, 600, 0);
            INSERT INTO observer_reads (observer_id, path, read_seq) VALUES
                ('o', '/truck/name', 3), ('o', '/truck/orderCount', 3), ('o', '/account/userName', 5);
            """)
        let database = try SQLiteStore.Database(path: path)
        let rows = try database.rows("SELECT r.observer_id, r.read_seq, s.paths FROM observer_read_sets r JOIN read_shapes s ON s.id = r.shape_id ORDER BY read_seq")
        #expect(rows.map { [$0[0], $0[1]] } == [[.text("o"), .integer(3)], [.text("o"), .integer(5)]])
        #expect(Set(rows[0][2].string?.split(separator: "\n").map(String.init) ?? []) == ["/truck/name", "/truck/orderCount"])
        #expect(rows[1][2] == .text("/account/userName"))
        #expect(try database.rows("SELECT name FROM sqlite_master WHERE name = 'observer_reads'").isEmpty)
    }

    /// 0007 copies the change log into a table whose check on `op` is made
    /// of comparisons: a log written before it is kept whole, and the check
    /// still refuses what is not an operation.
    @Test func theChangeLogIsKeptWhenItsCheckIsRewritten() throws {
        let path = try Self.migrated(before: "0007", applying: 2, then: """
            INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads)
            VALUES (7, 7, '/truck/name', 'set', '"A"', '"B"', '/truck/name', '')
            """)
        let database = try SQLiteStore.Database(path: path)
        #expect(try database.rows("SELECT seq, op, old, new FROM changes").map(\.values) ==
            [[.integer(7), .text("set"), .text("\"A\""), .text("\"B\"")]])
        #expect(throws: SQLiteError.self) {
            try database.execute("INSERT INTO changes (seq, txn, path, op, keys) VALUES (8, 8, '/truck/name', 'bogus', '')")
        }
        try database.execute("INSERT INTO changes (seq, txn, path, op, keys) VALUES (8, 8, '/truck/donuts', 'remove', '')")
        #expect(try database.rows("SELECT sql FROM sqlite_master WHERE name = 'changes'").first?[0].string?
            .contains("op = 'set' OR op = 'insert' OR op = 'remove'") == true)
    }
}
