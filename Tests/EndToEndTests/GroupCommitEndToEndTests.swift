import Dispatch
import Foundation
import Testing
import TestSupport

/// Many clients writing at once: their writes share transactions, and each
/// is still answered after its own commit, counted once, and kept.
@Suite struct GroupCommitEndToEndTests {
    final class Acknowledged: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var ids: [String] = []
        private(set) var statuses: [Int: Int] = [:]
        func add(_ status: Int, _ id: String?) {
            lock.lock()
            statuses[status, default: 0] += 1
            if status == 201, let id { ids.append(id) }
            lock.unlock()
        }
        var snapshot: (ids: [String], statuses: [Int: Int]) { lock.lock(); defer { lock.unlock() }; return (ids, statuses) }
    }

    static func metric(_ name: String, in text: String) -> Int64? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int64($0.split(separator: " ").last ?? "") }
    }

    @Test func concurrentOrdersAreEachAnsweredCountedAndKept() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        _ = try client.get("/truck/orderCount", observer: observer)
        let before = try client.get("/metrics").text
        let acknowledged = Acknowledged()
        let port = server.port
        // 8 clients on keep-alive connections, 25 orders each.
        DispatchQueue.concurrentPerform(iterations: 8) { clientIndex in
            guard let connection = try? TestConnection(port: port) else { return }
            for i in 0..<25 {
                let response = try? connection.request("POST", "/truck/orders",
                                                       json: ["donutId": .string(Seed.glazed), "quantity": .int(Int64(clientIndex * 25 + i + 1))])
                acknowledged.add(response?.status ?? -1, response?.json["id"]?.stringValue)
            }
        }
        let (ids, statuses) = acknowledged.snapshot
        #expect(statuses == [201: 200])

        let orders = try client.get("/truck/orders").json["orders"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(Set(orders) == Set(ids))
        #expect(orders.count == 200)
        #expect(try client.get("/truck/orderCount").json["orderCount"] == 200)
        // Each order moved orderCount by one, in its own transaction.
        let changes = try client.changes(observer, since: 0, extra: "&limit=1000").json.changeList
        #expect(changes.map { $0["old"] } == (0..<200).map { JSONValue.int(Int64($0)) })
        #expect(changes.map { $0["new"] } == (1...200).map { JSONValue.int(Int64($0)) })

        let after = try client.get("/metrics").text
        let writes = (Self.metric("observable_writes_committed_total", in: after) ?? 0) - (Self.metric("observable_writes_committed_total", in: before) ?? 0)
        let commits = (Self.metric("observable_commits_total", in: after) ?? 0) - (Self.metric("observable_commits_total", in: before) ?? 0)
        #expect(writes == 200)
        #expect(commits >= 1 && commits <= 200)
    }

    /// Observers reading for the first time, many at once: their reads
    /// are stored together, and each read is answered once stored, kept
    /// across a restart, and heard of when what it showed changes.
    @Test func firstReadsOfManyObserversAtOnceAreEachStoredAndKept() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder)
        let client = first!.client
        let observers = try (0..<64).map { _ in try client.observer() }
        let port = first!.port
        let answered = Acknowledged()
        // 8 clients on keep-alive connections, 8 observers each.
        DispatchQueue.concurrentPerform(iterations: 8) { clientIndex in
            guard let connection = try? TestConnection(port: port) else { return }
            for observer in observers[(clientIndex * 8)..<(clientIndex * 8 + 8)] {
                let response = try? connection.request("GET", "/truck?fields=name,orderCount", headers: ["Observer": observer])
                answered.add(response?.status ?? -1, nil)
            }
        }
        #expect(answered.snapshot.statuses == [200: 64])
        first!.stop()
        first = nil

        let second = try TestServer(folder: folder)
        let again = second.client
        for observer in observers {
            #expect(try again.get("/observers/\(observer)").json["reads"] == ["/truck/name", "/truck/orderCount"])
        }
        _ = try again.patch("/truck", ["name": "Renamed"])
        for observer in observers {
            #expect(try again.changes(observer, since: 0).json.changePaths == ["/truck/name"])
        }
    }

    @Test func sigtermWhileWritesAreInFlightKeepsEveryAcknowledgedWrite() throws {
        let folder = temporaryFolder()
        // Six clients writing as fast as they can, from one address: trusted, past the write rate.
        let server = try ServerProcess(folder: folder, arguments: ["--trusted-addresses", "127.0.0.1"])
        let port = server.port
        let acknowledged = Acknowledged()
        let group = DispatchGroup()
        for _ in 0..<6 {
            DispatchQueue.global().async(group: group) {
                guard let connection = try? TestConnection(port: port, receiveTimeout: 10) else { return }
                // Until the server goes away: at most 5,000 orders a client.
                for i in 0..<5_000 {
                    guard let response = try? connection.request("POST", "/truck/orders",
                                                                  json: ["donutId": .string(Seed.glazed), "quantity": .int(Int64(i % 9 + 1))])
                    else { return }
                    acknowledged.add(response.status, response.json["id"]?.stringValue)
                }
            }
        }
        // Stop in the middle of the storm: once orders are being acknowledged.
        try waitUntil(timeout: 20) { acknowledged.snapshot.ids.count >= 100 }
        #expect(server.stop(signal: SIGTERM) == 0)
        #expect(group.wait(timeout: .now() + 30) == .success)
        let (ids, statuses) = acknowledged.snapshot
        #expect(!ids.isEmpty)
        // Every answer was a success: a write is answered after its commit,
        // or not at all when the connection closes first.
        #expect(statuses.keys.allSatisfy { $0 == 201 }, "\(statuses)")

        let restarted = try ServerProcess(folder: folder)
        let orders = try restarted.client.get("/truck/orders").json["orders"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(Set(ids).isSubset(of: Set(orders)))
        #expect(try restarted.client.get("/truck/orderCount").json["orderCount"] == .int(Int64(orders.count)))
        #expect(restarted.stop() == 0)
        #expect(try TestEngine.integrityCheck(folder: folder) == "ok")
    }
}
