import Dispatch
import Foundation
import JSON
import ModelObservation
@testable import ModelStore
import ModelStoreDatabases
@testable import ModelStoreSQLite
import Models
import SQLiteStore
import Testing
import TestSupport

/// Writes submitted while another holds the writer commit together, in one
/// transaction, and still each have their own changes, seqs, transaction
/// number and outcome.
@Suite struct GroupCommitTests {
    static let glazed = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"

    static func makeStore(folder: String = temporaryFolder()) throws -> Store {
        try Store(configuration: Store.Configuration(database: folder + "/observable.sqlite"), catalog: SeedModels.catalog())
    }

    /// The seed systems' migrations, as built in.
    static func seedMigrations() -> [(name: String, sql: String)] {
        SeedModels.catalog().migrations
    }

    static func temporaryFolder() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("observable-group-" + UUID().uuidString).path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Outcomes collected from the committing thread.
    final class Outcomes<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Int: Result<T, any Error>] = [:]
        let group = DispatchGroup()

        func expect(_ count: Int) { for _ in 0..<count { group.enter() } }
        func record(_ index: Int, _ result: Result<T, any Error>) {
            lock.lock()
            values[index] = result
            lock.unlock()
            group.leave()
        }
        func wait() -> [Int: Result<T, any Error>] {
            _ = group.wait(timeout: .now() + 30)
            lock.lock()
            defer { lock.unlock() }
            return values
        }
    }

    /// Commits a write whose body waits while `submit` runs, so that what
    /// it submits queues behind that commit; then lets it finish.
    static func whileCommitting(_ store: Store, _ submit: () throws -> Void) throws {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let holding = PreparedWrite<Void> { _ in
                entered.signal()
                gate.wait()
            }
            _ = store.submit(holding, wait: { true }, then: { _ in })
            done.signal()
        }
        entered.wait()
        try submit()
        gate.signal()
        done.wait()
    }

    /// Submits `prepared`; its outcome, now or from the committing thread,
    /// goes to `outcomes` at `index`.
    static func submit<T: Sendable>(_ store: Store, _ prepared: PreparedWrite<T>, _ outcomes: Outcomes<T>, _ index: Int) {
        if let outcome = store.submit(prepared, wait: { true }, then: { outcomes.record(index, $0) }) {
            outcomes.record(index, outcome)
        }
    }

    /// The change log's rows, oldest first.
    static func changes(_ store: Store) throws -> [(seq: Int64, txn: Int64, path: String, old: String?, new: String?)] {
        try store.writer.withLock { storage in
            try Self.database(storage).rows("SELECT seq, txn, path, old, new FROM changes ORDER BY seq").map {
                ($0[0].int64 ?? 0, $0[1].int64 ?? 0, $0[2].string ?? "", $0[3].string, $0[4].string)
            }
        }
    }

    static func database(_ storage: any ModelStorage) -> Database {
        (storage as! SQLiteStorage).database
    }

    /// A new order, as `POST /truck/orders` makes it.
    static func order(_ donutId: String, _ quantity: Int64) throws -> PreparedWrite<Answer> {
        FoodTruck.orders.create(try ValidatedBody(JSONObject(["donutId": .string(donutId), "quantity": .int(quantity)]),
                                                  fields: FoodTruck.orders.creatableFields, requireAll: true))
    }

    /// A new donut, as `POST /truck/donuts` makes it.
    static func donut(_ name: String) throws -> PreparedWrite<Answer> {
        FoodTruck.donuts.create(try ValidatedBody(JSONObject(["name": .string(name)]), fields: FoodTruck.donuts.creatableFields,
                                                  requireAll: true))
    }

    /// The id and quantity (0 for a donut) of the element an answer holds,
    /// read with Foundation's parser.
    static func order(in answer: Answer) throws -> (id: String, quantity: Int64) {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body ?? [])) as? [String: Any])
        return (try #require(object["id"] as? String), Int64(object["quantity"] as? Int ?? 0))
    }

    static func orderRows(_ store: Store) throws -> Int64 {
        try store.writer.withLock { try Self.database($0).rows("SELECT COUNT(*) FROM orders").first?[0].int64 ?? -1 }
    }

    /// Reads are stored a row a read, each once. Reads of an observer that
    /// is gone from the database do not stop the others in the same group,
    /// and the next start deletes them.
    @Test func readsOfAnObserverNoLongerStoredAreDeletedAtTheNextStart() throws {
        let folder = Self.temporaryFolder()
        var store: Store? = try Self.makeStore(folder: folder)
        let id = try store!.createObserver(ttlSeconds: 600).id
        let keys = [PropertyKey("/truck/name"), PropertyKey("/truck/orderCount")]
        let read = ObserverReads(observer: id, seq: 1, keys: keys)
        try store!.writer.withLock { storage in
            try storage.begin()
            try storage.addReads([ObserverReads(observer: "gone", seq: 1, keys: keys), read,
                                  ObserverReads(observer: "gone too", seq: 2, keys: keys), read])
            try storage.commit()
        }
        let rows = { (store: Store) in
            try store.writer.withLock { storage in
                try Self.database(storage).rows("SELECT r.observer_id, r.read_seq, s.paths FROM observer_read_sets r JOIN read_shapes s ON s.id = r.shape_id ORDER BY r.observer_id").map(\.values)
            }
        }
        #expect(try rows(store!).count == 3)
        store!.close()
        store = try Self.makeStore(folder: folder)
        defer { store!.close() }
        #expect(try rows(store!) == [[.text(id), .integer(1), .text("/truck/name\n/truck/orderCount")]])
        #expect(store!.registry.observer(id)?.reads == [keys[0]: 1, keys[1]: 1])
    }

    /// The log is copied back into the database file by the checkpoint
    /// thread, not by a commit: the file grows within a couple of seconds
    /// of writes far fewer than the 4,000 pages at which a commit would.
    @Test func theLogIsCopiedBackOffTheCommitPath() throws {
        let folder = Self.temporaryFolder()
        let store = try Self.makeStore(folder: folder)
        defer { store.close() }
        let file = folder + "/observable.sqlite"
        func size() -> Int { ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0 }
        // Whatever the migrations left in the log is copied back first.
        Thread.sleep(forTimeInterval: 1.5)
        let before = size()
        for i in 0..<300 { _ = try store.write(try Self.donut("Donut \(i) " + String(repeating: "x", count: 150))) }
        var after = size()
        for _ in 0..<40 where after <= before {
            Thread.sleep(forTimeInterval: 0.1)
            after = size()
        }
        #expect(after > before)
    }

    @Test func writesThatWaitTogetherShareOneTransactionAndKeepTheirOwnChanges() throws {
        let store = try Self.makeStore()
        defer { store.close() }
        let before = store.commitCounts
        let outcomes = Outcomes<Answer>()
        outcomes.expect(20)
        try Self.whileCommitting(store) {
            for index in 0..<20 {
                Self.submit(store, try Self.order(Self.glazed, Int64(index + 1)), outcomes, index)
            }
        }
        let results = outcomes.wait()
        #expect(results.count == 20)
        let orders = try (0..<20).map { try Self.order(in: try #require(results[$0]).get()) }
        #expect(orders.map(\.quantity) == (1...20).map(Int64.init))

        let after = store.commitCounts
        // The holding write, then all the others at once.
        #expect(after.writes - before.writes == 21)
        #expect(after.transactions - before.transactions == 2)

        #expect(store.state[FoodTruck.orders].count == 20)
        #expect(try Self.orderRows(store) == 20)
        // Each write is a transaction of its own in the log: the order's
        // insertion and orderCount's move, numbered by the first seq, in
        // submission order, the count going up by one each time.
        let log = try Self.changes(store)
        #expect(log.count == 40)
        for (index, pair) in stride(from: 0, to: log.count, by: 2).map({ (log[$0], log[$0 + 1]) }).enumerated() {
            #expect(pair.0.path == "/truck/orders" && pair.1.path == "/truck/orderCount")
            #expect(pair.0.txn == pair.0.seq && pair.1.txn == pair.0.seq)
            #expect(pair.0.new?.contains(orders[index].id) == true)
            #expect(pair.1.old == String(index) && pair.1.new == String(index + 1))
        }
        #expect(store.state.seq == log.last?.seq)
        #expect(store.registry.lastSeq == log.last?.seq)
    }

    @Test func aWriteRefusedInABatchFailsAloneAndTheOthersCommit() throws {
        let store = try Self.makeStore()
        defer { store.close() }
        let outcomes = Outcomes<Answer>()
        outcomes.expect(3)
        try Self.whileCommitting(store) {
            Self.submit(store, try Self.order(Self.glazed, 1), outcomes, 0)
            Self.submit(store, try Self.order("no-such-donut", 2), outcomes, 1)
            Self.submit(store, try Self.order(Self.glazed, 3), outcomes, 2)
        }
        let results = outcomes.wait()
        #expect(try results[0].map { try Self.order(in: $0.get()).quantity } == 1)
        #expect(try results[2].map { try Self.order(in: $0.get()).quantity } == 3)
        #expect(throws: ModelError.unprocessable("no donut no-such-donut on the menu")) { try results[1]?.get() }
        #expect(store.state[FoodTruck.orders].count == 2)
        #expect(try Self.orderRows(store) == 2)
        #expect(try Self.changes(store).map(\.seq) == [1, 2, 3, 4])
    }

    @Test func aWriteThatFailsAfterChangingRowsLeavesNothingAndTheOthersCommit() throws {
        let store = try Self.makeStore()
        defer { store.close() }
        // A write that inserts a row and then refuses: the batch's
        // transaction is rolled back and each write runs again on its own.
        let faulty = PreparedWrite<Void> { tx in
            try Self.database(tx.storage).execute("INSERT INTO orders (id, position, donut_id, quantity) VALUES ('faulty', 999, ?, 1)",
                                                  [.text(Self.glazed)])
            throw ModelError.unprocessable("refused after inserting")
        }
        let orders = Outcomes<Answer>()
        let failures = Outcomes<Void>()
        orders.expect(2)
        failures.expect(1)
        try Self.whileCommitting(store) {
            Self.submit(store, try Self.order(Self.glazed, 1), orders, 0)
            Self.submit(store, faulty, failures, 0)
            Self.submit(store, try Self.order(Self.glazed, 2), orders, 1)
        }
        let committed = orders.wait()
        #expect(try committed[0].map { try Self.order(in: $0.get()).quantity } == 1)
        #expect(try committed[1].map { try Self.order(in: $0.get()).quantity } == 2)
        #expect(throws: ModelError.unprocessable("refused after inserting")) { try failures.wait()[0]?.get() }
        #expect(store.state[FoodTruck.orders].count == 2)
        #expect(try Self.orderRows(store) == 2)
        #expect(try store.writer.withLock { try Self.database($0).rows("SELECT id FROM orders WHERE id = 'faulty'") }.isEmpty)
        #expect(try Self.changes(store).map(\.seq) == [1, 2, 3, 4])
    }

    @Test func closingCommitsWhatWasQueuedAndRefusesMore() throws {
        let folder = Self.temporaryFolder()
        let store = try Self.makeStore(folder: folder)
        let outcomes = Outcomes<Answer>()
        outcomes.expect(50)
        let closed = DispatchSemaphore(value: 0)
        try Self.whileCommitting(store) {
            for index in 0..<50 {
                Self.submit(store, try Self.order(Self.glazed, 1), outcomes, index)
            }
            // Closing waits for the queued writes, committed once the
            // holding commit ends.
            DispatchQueue.global().async {
                store.close()
                closed.signal()
            }
            // Closing has begun once a write is refused. Until then the
            // probe, which changes nothing, queues like the orders.
            try waitUntil {
                let probe = store.submit(PreparedWrite<Void> { _ in }, wait: { true }, then: { _ in })
                if case .failure = probe { return true }
                return false
            }
        }
        #expect(closed.wait(timeout: .now() + 30) == .success)
        let results = outcomes.wait()
        #expect(results.count == 50)
        #expect(results.values.allSatisfy { (try? $0.get()) != nil })

        let late = Outcomes<Answer>()
        late.expect(1)
        Self.submit(store, try Self.order(Self.glazed, 1), late, 0)
        #expect(throws: ModelError(.unavailable, "the server is stopping")) { try late.wait()[0]?.get() }

        let reopened = try Self.makeStore(folder: folder)
        defer { reopened.close() }
        #expect(reopened.state[FoodTruck.orders].count == 50)
        #expect(try Self.orderRows(reopened) == 50)
    }

    @Test func aWriteWhenNobodyCommitsIsCommittedAtOnceOnItsOwnThread() throws {
        let store = try Self.makeStore()
        defer { store.close() }
        let outcome = store.submit(try Self.order(Self.glazed, 3), wait: {
            Issue.record("nobody was committing: the write should not wait")
            return true
        }, then: { _ in Issue.record("an outcome returned at once is not also handed to the completion") })
        #expect(try outcome.map { try Self.order(in: $0.get()).quantity } == 3)
        #expect(store.state[FoodTruck.orders].count == 1)
    }
}
