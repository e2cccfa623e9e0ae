import Foundation
@testable import API
import HTTPServer
import Models
import Testing
import TestSupport

/// The quotas that keep one client, or all of them together, from taking
/// more than the server can give: each refusal is problem+json and changes
/// nothing, a client at its quota does not stop another (a token of its
/// own, or another address: all of 127/8 is loopback), and what one gives
/// back can be taken again.
@Suite struct QuotaTests {
    /// The value of `sample` (a name with its labels, as written) in `/metrics`.
    static func metric(_ client: TestClient, _ sample: String) throws -> Int64? {
        for line in try client.get("/metrics").text.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Int64(line.dropFirst(sample.count + 1))
        }
        return nil
    }

    static func quota(_ client: TestClient, _ family: String, _ quota: String) throws -> Int64? {
        try metric(client, "observable_quota_\(family){quota=\"\(quota)\"}")
    }

    static func expectProblem(_ response: TestResponse, _ status: Int, mentioning flag: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(response.json["status"]?.intValue == Int64(status), sourceLocation: sourceLocation)
        #expect(response.json["detail"]?.stringValue?.contains(flag) == true, "\(response.text)", sourceLocation: sourceLocation)
    }

    @Test func aClientAtItsQuotaOfObserversIsRefusedAnotherIsServedAndADeleteGivesRoomBack() throws {
        let server = try TestServer { $0.store.maxObserversPerClient = 3 }
        let first = server.client
        let second = TestClient(port: server.port, source: "127.0.0.2")
        let ids = try (0..<3).map { _ in try first.observer() }
        let refused = try first.post("/observers", ["ttlSeconds": 60])
        Self.expectProblem(refused, 429, mentioning: "--max-observers-per-client")
        #expect(refused.header("Retry-After") == "60")
        #expect(try Self.metric(first, "observable_observers") == 3)

        for _ in 0..<3 { _ = try second.observer() }
        Self.expectProblem(try second.post("/observers"), 429, mentioning: "--max-observers-per-client")
        #expect(try Self.metric(first, "observable_observer_clients") == 2)

        #expect(try first.delete("/observers/\(ids[0])").status == 204)
        #expect(try first.post("/observers").status == 201)
        #expect(try first.post("/observers").status == 429)
        #expect(try Self.quota(first, "limit", "observers_per_client") == 3)
        #expect(try Self.quota(first, "used", "observers_per_client") == 3)
        #expect(try Self.quota(first, "refusals_total", "observers_per_client") == 3)
    }

    @Test func anObserverThatExpiresGivesItsClientRoomBack() throws {
        let server = try TestServer { $0.store.maxObserversPerClient = 2 }
        let client = server.client
        _ = try client.observer(ttl: 1)
        _ = try client.observer(ttl: 1)
        #expect(try client.post("/observers").status == 429)
        try waitUntil(timeout: 10) { try Self.metric(client, "observable_observers") == 0 }
        #expect(try Self.quota(client, "used", "observers_per_client") == 0)
        #expect(try client.post("/observers").status == 201)
    }

    /// A token the server accepts names a client of its own, by a digest:
    /// the token is stored nowhere. A token it does not accept makes no new
    /// client: the request counts as its address.
    @Test func anAcceptedTokenIsAClientOfItsOwnAndAnUnknownOneCountsAsItsAddress() throws {
        let folder = temporaryFolder()
        let server = try TestServer(folder: folder) {
            $0.store.maxObserversPerClient = 1
            $0.access = AccessPolicy(writeToken: "write-secret")
        }
        let anonymous = server.client
        let withToken = TestClient(port: server.port, headers: ["Authorization": "Bearer write-secret"])
        let unknown = TestClient(port: server.port, headers: ["Authorization": "Bearer made-up"])
        #expect(try anonymous.post("/observers").status == 201)
        #expect(try unknown.post("/observers").status == 429)
        #expect(try withToken.post("/observers").status == 201)
        #expect(try withToken.post("/observers").status == 429)
        #expect(try TestEngine.integer("SELECT COUNT(*) FROM observers WHERE owner = 'address:127.0.0.1'", folder: folder) == 1)
        #expect(try TestEngine.integer("SELECT COUNT(*) FROM observers WHERE owner LIKE 'token:%'", folder: folder) == 1)
        #expect(try TestEngine.integer("SELECT COUNT(*) FROM observers WHERE owner LIKE '%secret%'", folder: folder) == 0)
    }

    /// Who created each observer is stored with it: after a restart the
    /// client is still at its quota, and a delete still gives room back.
    @Test func whoHoldsWhichObserverSurvivesARestart() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder) { $0.store.maxObserversPerClient = 2 }
        let ids = try (0..<2).map { _ in try first!.client.observer() }
        first?.stop()
        first = nil
        let second = try TestServer(folder: folder) { $0.store.maxObserversPerClient = 2 }
        #expect(try second.client.post("/observers").status == 429)
        #expect(try TestClient(port: second.port, source: "127.0.0.2").post("/observers").status == 201)
        #expect(try second.client.delete("/observers/\(ids[0])").status == 204)
        #expect(try second.client.post("/observers").status == 201)
    }

    @Test func observersInAllAreBounded() throws {
        let server = try TestServer { $0.store.maxObservers = 2 }
        _ = try server.client.observer()
        _ = try TestClient(port: server.port, source: "127.0.0.2").observer()
        let refused = try TestClient(port: server.port, source: "127.0.0.3").post("/observers")
        Self.expectProblem(refused, 507, mentioning: "--max-observers")
        #expect(try Self.metric(server.client, "observable_observers") == 2)
        #expect(try Self.quota(server.client, "refusals_total", "observers") == 1)
    }

    @Test func aTTLPastTheMaximumIsRefused() throws {
        let server = try TestServer { $0.store.maxObserverTTL = 60 }
        let client = server.client
        #expect(try client.post("/observers", ["ttlSeconds": 60]).status == 201)
        Self.expectProblem(try client.post("/observers", ["ttlSeconds": 61]), 422, mentioning: "--max-observer-ttl")
        #expect(try client.post("/observers", ["ttlSeconds": 86_401]).status == 422)
        #expect(try Self.metric(client, "observable_observers") == 1)
        #expect(try Self.quota(client, "refusals_total", "observer_ttl") == 1)
        #expect(try Self.quota(client, "limit", "observer_ttl") == 60)
    }

    /// Past the registry's memory, new observers and new reads are refused
    /// (`507`). A refused read is refused whole: its answer is not sent,
    /// and a change to what it showed does not reach its observer.
    @Test func theRegistrysMemoryIsBoundedAndARefusedReadTracksNothing() throws {
        let server = try TestServer { $0.store.maxRegistryMemory = 4_000 }
        let client = server.client
        let reader = try client.observer()
        #expect(try client.get("/truck/donuts/\(Seed.glazed)", observer: reader).status == 200)
        var made: [String] = []
        var refusedObserver: TestResponse?
        for _ in 0..<20 {
            let created = try client.post("/observers")
            guard created.status == 201, let id = created.json["id"]?.stringValue else {
                refusedObserver = created
                break
            }
            made.append(id)
        }
        let refused = try #require(refusedObserver)
        Self.expectProblem(refused, 507, mentioning: "--max-registry-memory")
        #expect(try Self.metric(client, "observable_observers") == Int64(made.count + 1))
        let estimate = try #require(try Self.metric(client, "observable_registry_bytes"))
        #expect(estimate <= 4_000)

        var refusedRead: (donut: String, cursor: Int64)?
        for donut in [Seed.chocolate, Seed.strawberry, Seed.maple] {
            let before = try client.get("/observers/\(reader)")
            let read = try client.get("/truck/donuts/\(donut)", observer: reader)
            guard read.status == 507 else { continue }
            Self.expectProblem(read, 507, mentioning: "--max-registry-memory")
            #expect(try client.get("/observers/\(reader)").json["reads"] == before.json["reads"])
            refusedRead = (donut, try #require(before.json["cursor"]?.intValue))
            break
        }
        let (donut, cursor) = try #require(refusedRead)
        #expect(try client.patch("/truck/donuts/\(donut)", ["name": "Renamed"]).status == 200)
        #expect(try client.changes(reader, since: cursor).json.changeList == [])
        #expect(try Self.quota(client, "refusals_total", "registry_memory") == 2)

        for id in made { #expect(try client.delete("/observers/\(id)").status == 204) }
        #expect(try client.get("/truck/donuts/\(donut)", observer: reader).status == 200)
        #expect(try client.post("/observers").status == 201)
    }

    @Test func runningJobsAndHowOftenEachIsAdvancedAreBounded() throws {
        var limits = Jobs.Limits()
        limits.maxRunning = 2
        limits.minIntervalMs = 100
        let server = try TestServer { $0.models = SeedModels.catalog(jobLimits: limits) }
        let client = server.client
        // 1,000 s and 10 s from finishing.
        let first = try #require(try client.post("/jobs", ["total": 1000, "step": 1, "intervalMs": 1000]).json["id"]?.stringValue)
        #expect(try client.post("/jobs", ["total": 1000, "step": 100, "intervalMs": 1000]).status == 201)
        let refused = try client.post("/jobs", ["total": 1000, "step": 1, "intervalMs": 1000])
        Self.expectProblem(refused, 429, mentioning: "--max-running-jobs")
        let retryAfter = try #require(refused.header("Retry-After").flatMap { Int($0) })
        #expect((1...10).contains(retryAfter))
        #expect(try client.get("/jobs").json["jobs"]?.arrayValue?.count == 2)
        // Reported by clients: not advanced by the server, not counted.
        #expect(try client.post("/jobs", ["total": 10]).status == 201)
        Self.expectProblem(try client.post("/jobs", ["total": 10, "step": 1, "intervalMs": 50]), 422, mentioning: "--min-job-interval")
        #expect(try Self.quota(client, "used", "running_jobs") == 2)

        #expect(try client.delete("/jobs/\(first)").status == 204)
        #expect(try client.post("/jobs", ["total": 1000, "step": 1, "intervalMs": 100]).status == 201)
        #expect(try Self.quota(client, "refusals_total", "running_jobs") == 1)
        #expect(try Self.quota(client, "refusals_total", "job_interval_ms") == 1)
        #expect(try Self.quota(client, "limit", "job_interval_ms") == 100)
    }

    @Test func aClientAtItsQuotaOfStreamsIsRefusedAnotherIsServedAndAnEndedStreamGivesRoomBack() throws {
        let server = try TestServer { $0.limits.maxStreamsPerClient = 2 }
        let client = server.client
        let observers = try (0..<4).map { _ in try client.observer() }
        let open = try observers[0..<2].map { try EventStreamClient(port: server.port, observer: $0) }
        #expect(open.map(\.head.status) == [200, 200])
        let refused = try EventStreamClient(port: server.port, observer: observers[2])
        #expect(refused.head.status == 429)
        #expect(refused.head.headers["content-type"] == "application/problem+json")
        #expect(refused.head.headers["retry-after"] == "5")
        #expect(try Self.quota(client, "used", "streams_per_client") == 2)

        let other = try EventStreamClient(port: server.port, observer: observers[3], source: "127.0.0.2")
        #expect(other.head.status == 200)
        // A stream taking the place of one of the same observer is let in; the old one ends.
        let again = try EventStreamClient(port: server.port, observer: observers[0])
        #expect(again.head.status == 200)
        _ = try open[0].rest()
        // A stream that ends gives its place back (deleting its observer ends it).
        #expect(try client.delete("/observers/\(observers[1])").status == 204)
        _ = try open[1].rest()
        var reopened: EventStreamClient?
        try waitUntil(timeout: 10) {
            let stream = try EventStreamClient(port: server.port, observer: observers[2])
            if stream.head.status == 200 { reopened = stream }
            return reopened != nil
        }
        #expect(try Self.quota(client, "refusals_total", "streams_per_client").map { $0 >= 1 } == true)
        withExtendedLifetime((again, other, reopened)) {}
    }
}

/// Writes bounded per client: a rate, rows per collection, and the
/// addresses exempt from both.
@Suite struct WriteQuotaTests {
    static let order: JSONValue = ["donutId": .string(Seed.glazed), "quantity": 1]

    /// Past its burst a client is refused with `429` and `Retry-After`, and
    /// nothing is written; another address still writes; tokens come back
    /// at the rate.
    @Test func aClientPastItsWriteRateIsRefusedAndAnotherIsNot() throws {
        let server = try TestServer {
            $0.limits.maxWritesPerSecond = 2
            $0.limits.writeBurst = 3
        }
        let first = server.client
        for _ in 0..<3 { #expect(try first.post("/truck/orders", Self.order).status == 201) }
        let refused = try first.post("/truck/orders", Self.order)
        QuotaTests.expectProblem(refused, 429, mentioning: "--max-writes-per-second")
        #expect(refused.header("Retry-After") == "1")
        #expect(try first.get("/truck/orderCount").json["orderCount"] == 3)
        // Reads are not writes.
        #expect(try first.get("/truck").status == 200)
        let second = TestClient(port: server.port, source: "127.0.0.2")
        #expect(try second.post("/truck/orders", Self.order).status == 201)
        try waitUntil(timeout: 5) { (try? first.post("/truck/orders", Self.order).status) == 201 }
        #expect(try QuotaTests.quota(first, "refusals_total", "writes_per_second") ?? 0 >= 1)
    }

    /// A collection at its row quota refuses another insert with `507`;
    /// a delete gives room back; other collections are not affected.
    @Test func aCollectionAtItsRowQuotaRefusesAnInsertUntilOneIsDeleted() throws {
        let server = try TestServer { $0.store.maxRowsPerCollection = 5 }
        let client = server.client
        // The seed's four donuts, and one more.
        #expect(try client.post("/truck/donuts", ["name": "Cruller"]).status == 201)
        let refused = try client.post("/truck/donuts", ["name": "Bear claw"])
        QuotaTests.expectProblem(refused, 507, mentioning: "--max-rows")
        #expect(try client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 5)
        #expect(try client.post("/truck/orders", Self.order).status == 201)
        #expect(try client.delete("/truck/donuts/\(Seed.maple)").status == 204)
        #expect(try client.post("/truck/donuts", ["name": "Bear claw"]).status == 201)
        #expect(try QuotaTests.quota(client, "refusals_total", "rows_per_collection") == 1)
    }

    /// A trusted address writes past the rate and the row quota, and holds
    /// observers past the per-client quota; another address does not.
    @Test func aTrustedAddressIsExemptFromEveryPerClientQuota() throws {
        let server = try TestServer {
            $0.limits.maxWritesPerSecond = 1
            $0.limits.writeBurst = 1
            $0.store.maxRowsPerCollection = 2
            $0.store.maxObserversPerClient = 1
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.3, 10.0.0.0/8")
        }
        let trusted = TestClient(port: server.port, source: "127.0.0.3")
        for _ in 0..<5 { #expect(try trusted.post("/truck/orders", Self.order).status == 201) }
        for _ in 0..<3 { #expect(try trusted.post("/observers", ["ttlSeconds": 60]).status == 201) }
        let other = TestClient(port: server.port, source: "127.0.0.4")
        QuotaTests.expectProblem(try other.post("/truck/orders", Self.order), 507, mentioning: "--max-rows")
        QuotaTests.expectProblem(try other.post("/truck/orders", Self.order), 429, mentioning: "--max-writes-per-second")
        #expect(try other.post("/observers", ["ttlSeconds": 60]).status == 201)
        #expect(try other.post("/observers", ["ttlSeconds": 60]).status == 429)
        #expect(try trusted.get("/truck/orderCount").json["orderCount"] == 5)
    }

    @Test func trustedListsAreAddressesAndRanges() throws {
        let list = try TrustedAddresses(parsing: " 192.0.2.7, 10.0.0.0/8,2001:db8::/32 , ::1")
        #expect(list.contains(address: "192.0.2.7") && !list.contains(address: "192.0.2.8"))
        #expect(list.contains(address: "10.200.3.4") && !list.contains(address: "11.0.0.1"))
        #expect(list.contains(address: "::ffff:10.1.2.3"))
        #expect(list.contains(address: "2001:db8:1:2::5") && !list.contains(address: "2001:db9::1"))
        #expect(list.contains(address: "::1"))
        for bad in ["10.0.0.0/33", "host.example", "10.0.0.0/x", "::/129"] {
            #expect(throws: TrustedAddressError.self) { try TrustedAddresses(parsing: bad) }
        }
        #expect(try TrustedAddresses(parsing: "").isEmpty)
    }
}

/// A full disk (here SQLite's `--max-database-size`, which fails a write as
/// a full disk does) is `507`, health says degraded, a metric counts it,
/// and once there is room again writes go on, every acknowledged one kept.
@Suite struct FullDiskTests {
    @Test(.enabled(if: !TestEngine.isPostgres, "a size limit of SQLite's"))
    func aFullDiskIsInsufficientStorageAndDegradedHealthUntilThereIsRoom() throws {
        let folder = temporaryFolder()
        // The database made, with 256 KiB of it taken by a table of the
        // test's: dropped later, as a file is deleted from a full disk.
        try TestServer(folder: folder).stop()
        try TestEngine.execute("CREATE TABLE filler (b BLOB); INSERT INTO filler VALUES (zeroblob(262144))", folder: folder)
        let server = try TestServer(folder: folder) {
            $0.store.maxDatabaseBytes = 900 << 10
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1")
        }
        let client = server.client
        #expect(try client.get("/healthz").json["status"] == "ok")
        // Rows of 2 KB: the row's own insert is the one the disk refuses
        // (SQLite then rolls the transaction back itself), not only the
        // change log's.
        let url = "https://example.com/" + String(repeating: "a", count: 2000) + ".png"
        var acknowledged: [String] = []
        var refused: TestResponse?
        for _ in 0..<2_000 {
            let answer = try client.post("/posts", ["imageURL": .string(url), "height": 10])
            guard answer.status == 201 else {
                refused = answer
                break
            }
            acknowledged.append(try #require(answer.json["id"]?.stringValue))
        }
        let answer = try #require(refused, "no write was refused")
        QuotaTests.expectProblem(answer, 507, mentioning: "disk")
        let health = try client.get("/healthz")
        #expect(health.status == 503 && health.json["status"] == "degraded")
        #expect(try QuotaTests.metric(client, "observable_disk_full") == 1)
        #expect(try QuotaTests.metric(client, "observable_disk_full_refusals_total") ?? 0 >= 1)
        // Reads go on; nothing refused was stored.
        #expect(try client.get("/posts").json["posts"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == acknowledged)

        // Room again: the next write commits, and health is ok again.
        try TestEngine.execute("DROP TABLE filler", folder: folder)
        let after = try client.post("/posts", ["imageURL": .string(url), "height": 10])
        #expect(after.status == 201, "\(after.text)")
        #expect(try client.get("/healthz").json["status"] == "ok")
        #expect(try QuotaTests.metric(client, "observable_disk_full") == 0)
        server.stop()
        // Every acknowledged write survived.
        let restarted = try TestServer(folder: folder)
        let kept = try restarted.client.get("/posts").json["posts"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(Array(kept.prefix(acknowledged.count)) == acknowledged && kept.count == acknowledged.count + 1)
    }

    /// The row's own insert refused by a full disk (SQLite rolls the whole
    /// transaction back then): `507`, not the `500` of a commit with no
    /// transaction left.
    @Test(.enabled(if: !TestEngine.isPostgres, "a size limit of SQLite's"))
    func aRowTheDiskCannotHoldIsInsufficientStorage() throws {
        let server = try TestServer {
            $0.store.maxDatabaseBytes = 3 << 20
            $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1")
        }
        let url = "https://example.com/" + String(repeating: "a", count: 2000) + ".png"
        var status = 201
        var posts = 0
        while status == 201, posts < 5_000 {
            status = try server.client.post("/posts", ["imageURL": .string(url), "height": 10]).status
            posts += 1
        }
        #expect(status == 507, "after \(posts) posts")
    }
}
