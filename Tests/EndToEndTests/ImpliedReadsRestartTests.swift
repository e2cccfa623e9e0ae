import Foundation
import Testing
import TestSupport

/// Reads implied by inserts (SPEC 3a) survive a restart (SPEC 2), however
/// the reads of the collection interleave with the commits of the inserts.
@Suite struct ImpliedReadsRestartTests {
    /// A value shared by the test's threads.
    final class Shared<Value>: @unchecked Sendable {
        // Safe to share: `storage` is only touched under `lock`.
        private let lock = NSLock()
        private var storage: Value
        init(_ value: Value) { storage = value }
        func update(_ body: (inout Value) -> Void) { lock.lock(); body(&storage); lock.unlock() }
        var value: Value { lock.lock(); defer { lock.unlock() }; return storage }
    }

    /// The ids of the donuts that `changes` inserted, and those it renamed.
    static func donuts(in changes: [JSONValue]) -> (inserted: Set<String>, renamed: Set<String>) {
        var inserted = Set<String>(), renamed = Set<String>()
        for change in changes {
            guard let path = change["path"]?.stringValue else { continue }
            if change["op"] == "insert", path == "/truck/donuts", let id = change["new"]?["id"]?.stringValue {
                inserted.insert(id)
            } else if change["op"] == "set", path.hasPrefix("/truck/donuts/"), path.hasSuffix("/name") {
                renamed.insert(String(path.dropFirst("/truck/donuts/".count).dropLast("/name".count)))
            }
        }
        return (inserted, renamed)
    }

    static func reads(of observer: String, _ client: TestClient) throws -> [String] {
        try client.get("/observers/\(observer)").json["reads"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    @Test func everyObserverKeepsTheReadsImpliedByInsertsAcrossARestartWhileWritersAddDonuts() throws {
        let folder = temporaryFolder()
        var server: ServerProcess? = try ServerProcess(folder: folder)
        let client = server!.client
        let observerCount = 60, writerCount = 4, donutsPerWriter = 20
        let total = writerCount * donutsPerWriter
        // Reads the membership before any insert: it receives them all.
        let witness = try client.observer()
        let start = try #require(try client.get("/truck/donuts?fields=id", observer: witness).cursor)
        let observers = try (0..<observerCount).map { _ in try client.observer() }

        let added = Shared(0)
        let readCursors = Shared([Int64?](repeating: nil, count: observerCount))
        let finished = Shared(0)
        for writer in 0..<writerCount {
            Thread.detachNewThread {
                for index in 0..<donutsPerWriter {
                    if (try? client.post("/truck/donuts", ["name": .string("w\(writer) #\(index)")]))?.status == 201 {
                        added.update { $0 += 1 }
                    }
                }
                finished.update { $0 += 1 }
            }
        }
        for (index, observer) in observers.enumerated() {
            Thread.detachNewThread {
                // Spread over the inserts, so that reads land while commits run.
                _ = try? waitUntil(timeout: 60, every: 0.002) { added.value >= index * total / observerCount }
                let cursor = (try? client.get("/truck/donuts?fields=id", observer: observer))?.cursor
                readCursors.update { $0[index] = cursor }
                finished.update { $0 += 1 }
            }
        }
        try waitUntil(timeout: 60) { finished.value == writerCount + observerCount }
        #expect(added.value == total)

        // Which insert each observer receives: those after its read's cursor.
        let all = try client.changes(witness, since: start, extra: "&limit=1000").json.changeList
        #expect(all.count == total)
        var insertedAfter: [(seq: Int64, donut: String)] = []
        for change in all {
            if let seq = change["seq"]?.intValue, let donut = change["new"]?["id"]?.stringValue { insertedAfter.append((seq, donut)) }
        }
        var received: [Set<String>] = []
        var readsBefore: [[String]] = []
        var cursors: [Int64] = []
        for (index, observer) in observers.enumerated() {
            let since = try #require(readCursors.value[index])
            let answer = try client.changes(observer, since: since, extra: "&limit=1000").json
            let inserted = Self.donuts(in: answer.changeList).inserted
            #expect(inserted == Set(insertedAfter.filter { $0.seq > since }.map(\.donut)), "observer \(index) from \(since)")
            received.append(inserted)
            cursors.append(try #require(answer["cursor"]?.intValue))
            readsBefore.append(try Self.reads(of: observer, client))
        }

        #expect(server!.stop(signal: SIGTERM) == 0)
        server = try ServerProcess(folder: folder)
        let again = server!.client
        var lost = 0
        for (index, observer) in observers.enumerated() {
            let reads = Set(try Self.reads(of: observer, again))
            let missing = Set(readsBefore[index]).subtracting(reads)
            let unnamed = received[index].filter { !reads.contains("/truck/donuts/\($0)/name") }
            if !missing.isEmpty { lost += 1 }
            #expect(missing.isEmpty && reads.count == readsBefore[index].count,
                    "observer \(index) had \(readsBefore[index].count) reads, now \(reads.count); lost e.g. \(missing.first ?? "-")")
            #expect(unnamed.isEmpty, "observer \(index) no longer reads the name of \(unnamed.count) donuts it received")
        }
        #expect(lost == 0, "\(lost) of \(observerCount) observers lost reads in the restart")

        // Each inserted donut renamed: the rename reaches exactly the
        // observers that received its insert.
        for (_, donut) in insertedAfter {
            #expect(try again.patch("/truck/donuts/\(donut)", ["name": "renamed"]).status == 200)
        }
        for (index, observer) in observers.enumerated() {
            let answer = try again.changes(observer, since: cursors[index], extra: "&limit=1000").json
            let renamed = Self.donuts(in: answer.changeList).renamed
            #expect(renamed == received[index],
                    "observer \(index): \(received[index].subtracting(renamed).count) renames missing, \(renamed.subtracting(received[index]).count) extra")
        }
        #expect(server!.stop(signal: SIGTERM) == 0)
    }
}
