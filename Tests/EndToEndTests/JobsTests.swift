import HTTPServer
import Foundation
import Models
import Testing
import TestSupport

@Suite struct JobsTests {
    /// A server that advances as many jobs, as often, as these tests ask
    /// (the quotas on jobs are `QuotaTests`').
    static func server(folder: String = temporaryFolder()) throws -> TestServer {
        var limits = Jobs.Limits()
        limits.maxRunning = 10_000
        limits.minIntervalMs = 10
        return try TestServer(folder: folder) {
            $0.models = SeedModels.catalog(jobLimits: limits)
            // A thousand jobs made at once: a trusted client, past the write rate.
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1")
        }
    }

    @Test func creationValidatesTotalStepAndInterval() throws {
        let server = try Self.server()
        let client = server.client
        for body: JSONValue in [
            [:], ["total": 0], ["total": -5], ["total": 1_000_000_001],
            ["total": 100, "step": 10], ["total": 100, "intervalMs": 100],
            ["total": 100, "step": 0, "intervalMs": 100], ["total": 100, "step": -1, "intervalMs": 100],
            ["total": 100, "step": 1, "intervalMs": 9], ["total": 100, "step": 1, "intervalMs": 3_600_001],
        ] {
            let response = try client.post("/jobs", body)
            #expect(response.status == 422, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        for body: JSONValue in [
            ["total": "100"], ["total": 1.5], ["total": nil], ["total": 100, "step": "1", "intervalMs": 100],
            ["total": 100, "step": 1, "intervalMs": 99.5], ["total": 100, "current": 0], ["total": 100, "name": "x"],
        ] {
            #expect(try client.post("/jobs", body).status == 400, "\(body)")
        }
        #expect(try client.request("POST", "/jobs", body: []).status == 400)
        #expect(try client.request("POST", "/jobs", body: Array(#"{"total": 1"#.utf8)).status == 400)
        #expect(try client.get("/jobs").json == ["jobs": []])

        for body: JSONValue in [
            ["total": 1], ["total": 1_000_000_000],
            ["total": 100, "step": 1, "intervalMs": 3_600_000], ["total": 100, "step": 1_000_000, "intervalMs": 3_600_000],
        ] {
            #expect(try client.post("/jobs", body).status == 201, "\(body)")
        }
        #expect(try client.get("/jobs").json["jobs"]?.arrayValue?.count == 4)
    }

    @Test func creationAnswersTheJobWithItsLocation() throws {
        let server = try Self.server()
        let client = server.client
        let created = try client.post("/jobs", ["total": 1000])
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(UUID(uuidString: id) != nil)
        #expect(created.header("Location") == "/jobs/\(id)")
        #expect(created.json == ["id": .string(id), "progress": ["current": 0, "total": 1000], "isComplete": false])
        let read = try client.get("/jobs/\(id)")
        #expect(read.status == 200)
        #expect(read.json == created.json)
        #expect(read.header("ETag") != nil)
        #expect(read.cursor == 1)
        #expect(try client.get("/jobs").json == ["jobs": [created.json]])
        #expect(try client.get("/jobs/\(id)?fields=isComplete").json == ["id": .string(id), "isComplete": false])
        #expect(try client.get("/jobs/\(id)?fields=colour").status == 400)
        #expect(try client.get("/jobs/no-such-job").status == 404)
        #expect(try client.request("PATCH", "/jobs/\(id)", json: [:]).status == 405)
        let etag = try #require(read.header("ETag"))
        _ = try client.post("/jobs/\(id)/progress", ["current": 1])
        #expect(try client.delete("/jobs/\(id)", headers: ["If-Match": etag]).status == 412)
        let fresh = try #require(try client.get("/jobs/\(id)").header("ETag"))
        #expect(try client.delete("/jobs/\(id)", headers: ["If-Match": fresh]).status == 204)
    }

    @Test func reportedProgressIsClampedAtTotalAndCompletesExactlyOnce() throws {
        let server = try Self.server()
        let client = server.client
        let id = try #require(try client.post("/jobs", ["total": 1000]).json["id"]?.stringValue)
        let observer = try client.observer()
        let cursor = try #require(try client.get("/jobs/\(id)", observer: observer).cursor)

        let first = try client.post("/jobs/\(id)/progress", ["current": 460])
        #expect(first.status == 200)
        #expect(first.json == ["id": .string(id), "progress": ["current": 460, "total": 1000], "isComplete": false])
        #expect(try client.post("/jobs/\(id)/progress", ["current": 460]).status == 200)  // the same value: nothing
        let overshoot = try client.post("/jobs/\(id)/progress", ["current": 1150])
        #expect(overshoot.status == 200)
        #expect(overshoot.json["progress"] == ["current": 1000, "total": 1000])
        #expect(overshoot.json["isComplete"] == true)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 1000]).status == 200)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 5000]).json["progress"] == ["current": 1000, "total": 1000])
        #expect(try client.get("/jobs/\(id)").json["isComplete"] == true)

        let changes = try client.changes(observer, since: cursor).json.changeList
        #expect(changes.map { $0.removing("seq") } == [
            ["path": .string("/jobs/\(id)/progress"), "op": "set", "old": ["current": 0, "total": 1000], "new": ["current": 460, "total": 1000]],
            ["path": .string("/jobs/\(id)/progress"), "op": "set", "old": ["current": 460, "total": 1000], "new": ["current": 1000, "total": 1000]],
            ["path": .string("/jobs/\(id)/isComplete"), "op": "set", "old": false, "new": true],
        ])
        // The change that completes the job and isComplete are one transaction.
        let seqs = changes.compactMap { $0["seq"]?.intValue }
        #expect(seqs.count == 3 && seqs[2] == seqs[1] + 1)
    }

    @Test func progressNeverGoesBackwards() throws {
        let server = try Self.server()
        let client = server.client
        let id = try #require(try client.post("/jobs", ["total": 1000]).json["id"]?.stringValue)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 500]).status == 200)
        let backwards = try client.post("/jobs/\(id)/progress", ["current": 499])
        #expect(backwards.status == 422)
        #expect(backwards.json["detail"]?.stringValue?.contains("backwards") == true)
        #expect(try client.post("/jobs/\(id)/progress", ["current": -1]).status == 422)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 2000]).status == 200)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 999]).status == 422)
        #expect(try client.get("/jobs/\(id)").json["progress"] == ["current": 1000, "total": 1000])
    }

    @Test func progressReportsAreValidated() throws {
        let server = try Self.server()
        let client = server.client
        let id = try #require(try client.post("/jobs", ["total": 1000]).json["id"]?.stringValue)
        #expect(try client.post("/jobs/\(id)/progress", [:]).status == 422)
        #expect(try client.post("/jobs/\(id)/progress", ["current": "460"]).status == 400)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 4.5]).status == 400)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 1, "total": 2]).status == 400)
        #expect(try client.request("POST", "/jobs/\(id)/progress").status == 400)
        #expect(try client.post("/jobs/no-such-job/progress", ["current": 1]).status == 404)
        #expect(try client.get("/jobs/\(id)").json["progress"] == ["current": 0, "total": 1000])
        #expect(try client.get("/healthz").json["seq"] == 1)
    }

    @Test func aServerAdvancedJobRefusesReportedProgress() throws {
        let server = try Self.server()
        let client = server.client
        let id = try #require(try client.post("/jobs", ["total": 1000, "step": 1, "intervalMs": 3_600_000]).json["id"]?.stringValue)
        let refused = try client.post("/jobs/\(id)/progress", ["current": 10])
        #expect(refused.status == 422)
        #expect(refused.json["detail"]?.stringValue?.contains("advanced by the server") == true)
        #expect(try client.get("/jobs/\(id)").json["progress"] == ["current": 0, "total": 1000])
    }

    @Test func aServerAdvancedJobCompletesByItselfAndItsObserverHearsEveryStep() throws {
        let server = try Self.server()
        let client = server.client
        let observer = try client.observer()
        let id = try #require(try client.post("/jobs", ["total": 1000, "step": 230, "intervalMs": 60]).json["id"]?.stringValue)
        let read = try client.get("/jobs/\(id)", observer: observer)
        let start = try #require(read.json["progress"]?["current"]?.intValue)
        let changes = try client.collectJobChanges(observer, since: try #require(read.cursor)) { changes in
            changes.contains { $0["path"] == .string("/jobs/\(id)/isComplete") }
        }
        var expected: [JSONValue] = []
        var current = start
        while current < 1000 {
            let next = min(current + 230, 1000)
            expected.append(["path": .string("/jobs/\(id)/progress"), "op": "set",
                             "old": ["current": .int(current), "total": 1000], "new": ["current": .int(next), "total": 1000]])
            current = next
        }
        expected.append(["path": .string("/jobs/\(id)/isComplete"), "op": "set", "old": false, "new": true])
        #expect(changes.map { $0.removing("seq") } == expected)
        #expect(try client.get("/jobs/\(id)").json == ["id": .string(id), "progress": ["current": 1000, "total": 1000], "isComplete": true])
        // A complete job is advanced no more: a long-poll over three of its
        // intervals hears nothing (and would answer at once if it did).
        #expect(try client.changes(observer, timeout: 0.2).json.changeList.isEmpty)
    }

    @Test func cancellingAJobRemovesItAndStopsItsChanges() throws {
        let server = try Self.server()
        let client = server.client
        let listObserver = try client.observer()
        _ = try client.get("/jobs", observer: listObserver)
        let created = try client.post("/jobs", ["total": 1_000_000, "step": 1, "intervalMs": 20])
        let id = try #require(created.json["id"]?.stringValue)
        let observer = try client.observer()
        let cursor = try #require(try client.get("/jobs/\(id)?fields=progress", observer: observer).cursor)
        let advanced = try client.collectJobChanges(observer, since: cursor) { !$0.isEmpty }
        #expect(advanced.first?["path"] == .string("/jobs/\(id)/progress"))

        #expect(try client.delete("/jobs/\(id)").status == 204)
        #expect(try client.get("/jobs/\(id)").status == 404)
        #expect(try client.delete("/jobs/\(id)").status == 404)
        #expect(try client.post("/jobs/\(id)/progress", ["current": 5]).status == 404)
        #expect(try client.get("/jobs").json == ["jobs": []])

        let all = try client.changes(observer, since: cursor, extra: "&limit=1000").json.changeList
        let removal = try #require(all.last)
        #expect(removal["path"] == "/jobs")
        #expect(removal["op"] == "remove")
        #expect(removal["old"]?["id"] == .string(id))
        #expect(all.dropLast().allSatisfy { $0["path"] == .string("/jobs/\(id)/progress") })
        let listChanges = try client.changes(listObserver, since: 0, extra: "&limit=1000").json.changeList
        #expect(listChanges.first?["op"] == "insert")
        #expect(listChanges.first?["new"] == created.json)
        #expect(listChanges.last?["op"] == "remove")

        let seq = try #require(try client.get("/healthz").json["seq"]?.intValue)
        // Nothing more happens: a long-poll over a dozen of the job's
        // intervals hears nothing (and would answer at once if it did).
        #expect(try client.changes(observer, timeout: 0.25).json.changeList.isEmpty)
        #expect(try client.get("/healthz").json["seq"]?.intValue == seq)
        #expect(try client.changes(observer, timeout: 0).json.changeList.isEmpty)
    }

    @Test func readerOfOneJobsProgressIsNotWokenByAnother() throws {
        let server = try Self.server()
        let client = server.client
        let a = try #require(try client.post("/jobs", ["total": 100]).json["id"]?.stringValue)
        let b = try #require(try client.post("/jobs", ["total": 100]).json["id"]?.stringValue)
        let observer = try client.observer()
        let cursor = try #require(try client.get("/jobs/\(a)?fields=progress", observer: observer).cursor)
        _ = try client.post("/jobs/\(b)/progress", ["current": 100])
        #expect(try client.changes(observer, since: cursor, timeout: 0.3).json.changeList.isEmpty)
        _ = try client.post("/jobs/\(a)/progress", ["current": 100])
        // isComplete was not read: only progress arrives.
        #expect(try client.changes(observer, since: cursor).json.changePaths == ["/jobs/\(a)/progress"])
        #expect(try client.get("/observers/\(observer)").json["reads"] == [.string("/jobs/\(a)/progress")])
    }

    @Test func aThousandJobsEvery50msAllCompleteAndTheirObserversHearEveryStep() throws {
        let server = try Self.server()
        let client = server.client
        let observer = try client.observer()
        let cursor = try #require(try client.get("/jobs", observer: observer).cursor)
        let threadsBefore = Self.threadCount()
        let started = Date()
        var ids: [String] = []
        // Some observers also read one job each, right after creating it.
        var single: [(observer: String, job: String, read: JSONValue, cursor: Int64)] = []
        for i in 0..<1000 {
            let created = try client.post("/jobs", ["total": 100, "step": 25, "intervalMs": 50])
            try #require(created.status == 201)
            let id = try #require(created.json["id"]?.stringValue)
            ids.append(id)
            if i % 50 == 0 {
                let reader = try client.observer()
                let read = try client.get("/jobs/\(id)?fields=progress", observer: reader)
                single.append((reader, id, read.json["progress"]?["current"] ?? .null, try #require(read.cursor)))
            }
        }
        let threadsWhileRunning = Self.threadCount()
        var completed = Set<String>()
        let changes = try client.collectJobChanges(observer, since: cursor, deadline: 15) { changes in
            for change in changes where change["new"] == true { completed.insert(change["path"]?.stringValue ?? "") }
            return completed.count == 1000
        }
        #expect(completed.count == 1000)
        // No thread per job: one scheduler advances them all. (Other tests
        // running meanwhile start a few threads each.)
        #expect(threadsWhileRunning - threadsBefore < 300)

        var byPath: [String: [JSONValue]] = [:]
        for change in changes { byPath[change["path"]?.stringValue ?? "", default: []].append(change) }
        #expect(byPath["/jobs"]?.count == 1000)
        let wrong = ids.filter { id in
            let steps = byPath["/jobs/\(id)/progress"] ?? []
            return steps.map { $0["old"]?["current"] } != [0, 25, 50, 75]
                || steps.map { $0["new"]?["current"] } != [25, 50, 75, 100]
                || byPath["/jobs/\(id)/isComplete"]?.map { $0.removing("seq").removing("path") } != [["op": "set", "old": false, "new": true]]
        }
        #expect(wrong.isEmpty, "\(wrong.count) jobs did not report every step exactly once, e.g. \(wrong.prefix(3))")
        for reader in single {
            let steps = try client.changes(reader.observer, since: reader.cursor).json.changeList
            #expect(steps.allSatisfy { $0["path"] == .string("/jobs/\(reader.job)/progress") })
            #expect(steps.first?["old"]?["current"] == reader.read)
            #expect(zip(steps, steps.dropFirst()).allSatisfy { $0["new"] == $1["old"] })
            #expect(steps.last?["new"] == ["current": 100, "total": 100])
        }
        let jobs = try client.get("/jobs").json["jobs"]?.arrayValue ?? []
        #expect(jobs.count == 1000)
        #expect(jobs.allSatisfy { $0["isComplete"] == true && $0["progress"] == ["current": 100, "total": 100] })
        #expect(Date().timeIntervalSince(started) < 20)
    }

    @Test func stoppingBackgroundWorkIsPromptAndFreezesProgress() throws {
        let server = try Self.server()
        let client = server.client
        let id = try #require(try client.post("/jobs", ["total": 1_000_000, "step": 1, "intervalMs": 10]).json["id"]?.stringValue)
        try waitUntil { (try client.get("/jobs/\(id)").json["progress"]?["current"]?.intValue ?? 0) > 0 }
        let start = Date()
        server.application.store.stopBackgroundWork()
        #expect(Date().timeIntervalSince(start) < 0.5)
        let observer = try client.observer()
        let read = try client.get("/jobs/\(id)", observer: observer)
        let frozen = read.json["progress"]?["current"]?.intValue
        #expect((frozen ?? 0) > 0)
        let cursor = try #require(read.cursor)
        // Frozen: a long-poll over ten of the job's intervals hears nothing
        // (and would answer at once if it did).
        #expect(try client.changes(observer, since: cursor, timeout: 0.1).json.changeList.isEmpty)
        #expect(try client.get("/jobs/\(id)").json["progress"]?["current"]?.intValue == frozen)
    }

    @Test func aRunningJobContinuesAfterARestartFromItsPersistedProgress() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try Self.server(folder: folder)
        let client = first!.client
        let id = try #require(try client.post("/jobs", ["total": 5000, "step": 1000, "intervalMs": 300]).json["id"]?.stringValue)
        let done = try #require(try client.post("/jobs", ["total": 10, "step": 10, "intervalMs": 10]).json["id"]?.stringValue)
        var before: Int64 = 0
        try waitUntil(timeout: 5) {
            before = try client.get("/jobs/\(id)").json["progress"]?["current"]?.intValue ?? 0
            return before >= 2000
        }
        #expect(before == 2000)
        let start = Date()
        first!.stop()
        #expect(Date().timeIntervalSince(start) < 1.5)
        first = nil

        let second = try Self.server(folder: folder)
        let again = second.client
        let observer = try again.observer()
        let read = try again.get("/jobs/\(id)", observer: observer)
        let resumed = try #require(read.json["progress"]?["current"]?.intValue)
        // Not started over: at most a step taken just before the stop and one just after the start.
        #expect(resumed >= before && resumed <= before + 2000)
        #expect(try again.get("/jobs/\(done)").json["isComplete"] == true)

        let changes = try again.collectJobChanges(observer, since: try #require(read.cursor)) { changes in
            changes.contains { $0["path"] == .string("/jobs/\(id)/isComplete") }
        }
        let steps = changes.filter { $0["path"] == .string("/jobs/\(id)/progress") }
        #expect(steps.map { $0["old"]?["current"]?.intValue ?? -1 } == Array(stride(from: resumed, to: 5000, by: 1000)))
        #expect(steps.map { $0["new"]?["current"]?.intValue ?? -1 } == Array(stride(from: resumed + 1000, through: 5000, by: 1000)))
        #expect(try again.get("/jobs").json["jobs"]?.arrayValue?.map { $0["isComplete"] } == [true, true])
    }

    static func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") } ?? ""
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
}

extension JSONValue {
    /// This object without `key`.
    fileprivate func removing(_ key: String) -> JSONValue {
        guard var object = objectValue else { return self }
        object[key] = nil
        return .object(object)
    }
}

extension TestClient {
    /// Long-polls `observer` from `since`, gathering changes until `done`
    /// holds for what has arrived so far or `deadline` seconds pass.
    fileprivate func collectJobChanges(_ observer: String, since: Int64, deadline: Double = 10,
                                       until done: ([JSONValue]) -> Bool) throws -> [JSONValue] {
        var changes: [JSONValue] = []
        var cursor = since
        let end = Date().addingTimeInterval(deadline)
        while Date() < end {
            let poll = try self.changes(observer, since: cursor, timeout: 1, extra: "&limit=1000").json
            changes.append(contentsOf: poll.changeList)
            cursor = poll["cursor"]?.intValue ?? cursor
            if done(changes) { break }
        }
        return changes
    }
}
