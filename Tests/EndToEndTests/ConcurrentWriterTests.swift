import Dispatch
import Foundation
import Testing

/// Clients that PATCH the same resource with If-Match: exactly one wins each
/// round, the others get 412, and no update is lost.
@Suite struct ConcurrentWriterTests {
    static func race(_ client: TestClient, path: String, rounds: Int, writers: Int, body: @escaping @Sendable (Int, Int) -> JSONValue) throws -> [[Int]] {
        var statuses: [[Int]] = []
        for round in 0..<rounds {
            let etag = try #require(try client.get(path).header("ETag"))
            let results = Results(count: writers)
            DispatchQueue.concurrentPerform(iterations: writers) { writer in
                let status = (try? client.patch(path, body(round, writer), headers: ["If-Match": etag]).status) ?? -1
                results.set(writer, status)
            }
            statuses.append(results.values)
        }
        return statuses
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var storage: [Int]
        init(count: Int) { storage = Array(repeating: 0, count: count) }
        func set(_ i: Int, _ v: Int) { lock.lock(); storage[i] = v; lock.unlock() }
        var values: [Int] { lock.lock(); defer { lock.unlock() }; return storage }
    }

    @Test func exactlyOneDonutWriterWinsEachRound() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let path = "/truck/donuts/\(Seed.glazed)"
        _ = try client.get(path + "?fields=name", observer: observer)
        let rounds = try Self.race(client, path: path, rounds: 20, writers: 6) { round, writer in
            ["name": .string("round \(round) writer \(writer)")]
        }
        var winners: [String] = []
        for (round, statuses) in rounds.enumerated() {
            #expect(statuses.filter { $0 == 200 }.count == 1, "round \(round): \(statuses)")
            #expect(statuses.filter { $0 == 412 }.count == 5, "round \(round): \(statuses)")
            if let writer = statuses.firstIndex(of: 200) { winners.append("round \(round) writer \(writer)") }
        }
        // No update is lost: every winner's write is in the change feed, in order.
        let names = try client.changes(observer, since: 0, extra: "&limit=1000").json.changeList.compactMap { $0["new"]?.stringValue }
        #expect(names == winners)
        #expect(try client.get(path).json["name"] == .string(winners.last ?? ""))
    }

    @Test func exactlyOneDotWriterWinsEachRound() throws {
        let server = try TestServer()
        let client = server.client
        let dot = try #require(try client.get("/grid").json["rows"]?.arrayValue?.first?.arrayValue?.first?["id"]?.stringValue)
        let path = "/grid/dots/\(dot)"
        let rounds = try Self.race(client, path: path, rounds: 20, writers: 4) { round, _ in
            ["isTapAnimated": .bool(round % 2 == 0)]
        }
        for (round, statuses) in rounds.enumerated() {
            #expect(statuses.filter { $0 == 200 }.count == 1, "round \(round): \(statuses)")
            #expect(statuses.filter { $0 == 412 }.count == 3, "round \(round): \(statuses)")
        }
        #expect(try client.get(path).json["isTapAnimated"] == .bool(19 % 2 == 0))
    }
}
