import Concurrency
import Dispatch
import Foundation
import ModelObservation
import Models
import SQLiteStore
import Testing
@testable import ModelStore
@testable import ModelStoreSQLite

/// Reads folded from the read journal are stored a batch to a row; an
/// observer's clear and deletion make its entries stop counting, and a
/// compaction drops those once they are many.
@Suite struct ReadBatchTests {
    static func entries(_ bytes: [UInt8]) -> [String] {
        var found: [String] = []
        ReadBatch.forEach(in: bytes) { observer, seq, shape in found.append("\(observer) \(seq) \(shape)") }
        return found
    }

    static func rows(_ store: Store, _ sql: String) throws -> [[SQLValue]] {
        try store.writer.withLock { try GroupCommitTests.database($0).rows(sql).map(\.values) }
    }

    /// The entries of every batch stored, in order.
    static func batchEntries(_ store: Store) throws -> [String] {
        try rows(store, "SELECT reads FROM observer_read_batches ORDER BY id").flatMap { entries($0[0].bytes ?? []) }
    }

    static func reads(_ store: Store, _ id: String) -> [String: Int64]? {
        store.registry.observer(id).map { observer in
            Dictionary(uniqueKeysWithValues: observer.reads.map { ($0.key.path, $0.value) })
        }
    }

    @Test func entriesAreReadBackAsWrittenAndABatchCutShortEndsAtItsLastWholeEntry() {
        var batch = ReadBatch()
        let long = String(repeating: "é", count: 200)
        batch.append(observer: "a", seq: 0, shape: 1)
        batch.append(observer: long, seq: 1 << 40, shape: 300)
        batch.append(observer: "", seq: .max, shape: 7)
        #expect(batch.count == 3)
        let all = ["a 0 1", "\(long) \(1 << 40) 300", " \(Int64.max) 7"]
        #expect(Self.entries(batch.bytes) == all)
        // Cut anywhere inside the last entry: the first two are read.
        for cut in (batch.bytes.count - 11)..<batch.bytes.count {
            #expect(Self.entries(Array(batch.bytes[..<cut])) == Array(all.prefix(2)))
        }
        #expect(Self.entries([2] + batch.bytes.dropFirst()) == [])
        #expect(Self.entries([]) == [])
    }

    /// A fold stores one row for its reads, none a read; a store opened
    /// again knows them, each key at the seq it was first read at.
    @Test func aFoldStoresOneBatchAndTheNextStartKnowsItsReads() throws {
        let folder = GroupCommitTests.temporaryFolder()
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        let ids = try (0..<50).map { _ in try store!.createObserver().id }
        for (i, id) in ids.enumerated() {
            try store!.track([PropertyKey("/truck/name"), PropertyKey("/truck/orderCount")], by: id, at: 0)
            if i % 2 == 0 { try store!.track([PropertyKey("/truck/orderCount"), PropertyKey("/truck/donuts")], by: id, at: 0) }
        }
        store!.foldReads(all: true)
        #expect(try Self.rows(store!, "SELECT COUNT(*) FROM observer_read_batches") == [[.integer(1)]])
        #expect(try Self.rows(store!, "SELECT COUNT(*) FROM observer_read_sets") == [[.integer(0)]])
        #expect(try Self.batchEntries(store!).count == 75)
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        defer { store!.close() }
        for (i, id) in ids.enumerated() {
            var expected: [String: Int64] = ["/truck/name": 0, "/truck/orderCount": 0]
            if i % 2 == 0 { expected["/truck/donuts"] = 0 }
            #expect(Self.reads(store!, id) == expected)
        }
    }

    /// A clear makes the entries stored before it stop counting, and not
    /// those stored after it, also when the same keys are read again at
    /// the same seq.
    @Test func aClearedObserverKnowsOnlyWhatItReadSinceAfterARestart() throws {
        let folder = GroupCommitTests.temporaryFolder()
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        let cleared = try store!.createObserver().id
        let again = try store!.createObserver().id
        let other = try store!.createObserver().id
        for id in [cleared, again, other] {
            try store!.track([PropertyKey("/truck/name"), PropertyKey("/truck/orderCount")], by: id, at: 0)
        }
        store!.foldReads(all: true)
        try store!.clearReads(of: cleared)
        try store!.clearReads(of: again)
        try store!.track([PropertyKey("/truck/donuts")], by: cleared, at: 0)
        try store!.track([PropertyKey("/truck/name")], by: again, at: 0)
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        defer { store!.close() }
        #expect(Self.reads(store!, cleared) == ["/truck/donuts": 0])
        #expect(Self.reads(store!, again) == ["/truck/name": 0])
        #expect(Self.reads(store!, other) == ["/truck/name": 0, "/truck/orderCount": 0])
    }

    /// Once as many entries no longer count as are stored, a compaction
    /// rewrites the batches with those that do: a deleted observer's and a
    /// cleared one's earlier entries are dropped, the others kept, and a
    /// store opened again knows the same reads.
    @Test func aCompactionDropsTheEntriesThatNoLongerCountAndKeepsTheOthers() throws {
        let folder = GroupCommitTests.temporaryFolder()
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        let count = SQLiteReadDurability.compactionMinimum * 2 + 200
        let ids = try (0..<count).map { _ in try store!.createObserver().id }
        for id in ids { try store!.track([PropertyKey("/truck/name")], by: id, at: 0) }
        store!.foldReads(all: true)
        let batches = try Self.rows(store!, "SELECT id FROM observer_read_batches")
        // Too few dropped yet: nothing is rewritten.
        for id in ids.prefix(100) { _ = try store!.deleteObserver(id) }
        store!.compactReadsIfDue()
        #expect(try Self.rows(store!, "SELECT id FROM observer_read_batches") == batches)
        #expect(try Self.batchEntries(store!).count == count)

        let deleted = Set(ids.prefix(SQLiteReadDurability.compactionMinimum + 200))
        for id in ids.prefix(SQLiteReadDurability.compactionMinimum + 200).dropFirst(100) { _ = try store!.deleteObserver(id) }
        // Cleared, then reading the same key at the same seq: kept once more.
        let cleared = ids[count - 1], clearedAndNothing = ids[count - 2]
        try store!.clearReads(of: cleared)
        try store!.clearReads(of: clearedAndNothing)
        try store!.track([PropertyKey("/truck/name")], by: cleared, at: 0)
        store!.foldReads(all: true)
        store!.compactReadsIfDue()
        let entries = try Self.batchEntries(store!)
        let kept = ids.filter { !deleted.contains($0) && $0 != clearedAndNothing }
        #expect(Set(entries.map { String($0.split(separator: " ")[0]) }) == Set(kept))
        #expect(entries.count == kept.count + 1)  // the cleared one's entry from before and after its clear
        #expect(try Self.rows(store!, "SELECT id FROM observer_read_batches") != batches)
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        defer { store!.close() }
        for id in ids {
            if deleted.contains(id) {
                #expect(Self.reads(store!, id) == nil)
            } else if id == clearedAndNothing {
                #expect(Self.reads(store!, id) == [:])
            } else {
                #expect(Self.reads(store!, id) == ["/truck/name": 0])
            }
        }
        // Nothing more to drop: the next look rewrites nothing.
        let after = try Self.rows(store!, "SELECT id FROM observer_read_batches")
        store!.compactReadsIfDue()
        #expect(try Self.rows(store!, "SELECT id FROM observer_read_batches") == after)
    }

    /// Entries that no longer count when a store opens are counted: enough
    /// of them are compacted without waiting for more to be dropped.
    @Test func entriesThatNoLongerCountAtStartAreCompacted() throws {
        let folder = GroupCommitTests.temporaryFolder()
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        let ids = try (0..<(SQLiteReadDurability.compactionMinimum + 100)).map { _ in try store!.createObserver().id }
        for id in ids { try store!.track([PropertyKey("/truck/name")], by: id, at: 0) }
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        // Deleted underneath the server, as an expiry in another run would.
        try store!.writer.withLock { storage in
            try GroupCommitTests.database(storage).execute("DELETE FROM observers WHERE id IN (SELECT id FROM observers ORDER BY id LIMIT 4150)", [])
        }
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        defer { store!.close() }
        store!.compactReadsIfDue()
        #expect(try Self.batchEntries(store!).count == ids.count - 4150)
    }

    /// Sets of keys that only reads of observers no longer there named are
    /// deleted at start, also one made that very start for reads recovered
    /// from the journal: a read of the same keys afterwards names a set
    /// that is stored.
    @Test func aSetOfKeysDeletedAtStartIsStoredAgainWhenReadAgain() throws {
        let folder = GroupCommitTests.temporaryFolder()
        let database = folder + "/observable.sqlite"
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        store!.close()
        let journal = try ReadJournal(path: database + "-reads")
        try journal.append([ReadJournalTests.read("no-such-observer", 0, ["/truck/name", "/truck/donuts"])])
        journal.close(removing: false)
        store = try GroupCommitTests.makeStore(folder: folder)
        #expect(try Self.rows(store!, "SELECT COUNT(*) FROM read_shapes WHERE paths = '/truck/name\n/truck/donuts'") == [[.integer(0)]])
        let id = try store!.createObserver().id
        try store!.track([PropertyKey("/truck/name"), PropertyKey("/truck/donuts")], by: id, at: 0)
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        defer { store!.close() }
        #expect(Self.reads(store!, id) == ["/truck/name": 0, "/truck/donuts": 0])
    }
}

extension ReadBatchTests {
    /// A compaction running while other threads read, clear and delete:
    /// a store opened afterwards knows exactly the reads the first one
    /// knew when it closed.
    @Test func aCompactionBesideReadsClearsAndDeletionsLosesNothingAndRevivesNothing() throws {
        let folder = GroupCommitTests.temporaryFolder()
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        let count = SQLiteReadDurability.compactionMinimum * 3
        let ids = try (0..<count).map { _ in try store!.createObserver().id }
        for id in ids { try store!.track([PropertyKey("/truck/name"), PropertyKey("/truck/orderCount")], by: id, at: 0) }
        store!.foldReads(all: true)
        // Enough gone for a compaction to be due.
        for id in ids.prefix(SQLiteReadDurability.compactionMinimum * 2) { _ = try store!.deleteObserver(id) }
        let rest = Array(ids.dropFirst(SQLiteReadDurability.compactionMinimum * 2))
        // Cleared before the compaction: their earlier entries must not count again.
        for (i, id) in rest.enumerated() where i % 29 == 1 {
            try store!.clearReads(of: id)
            if i % 2 == 0 { try store!.track([PropertyKey("/truck/name")], by: id, at: 0) }
        }
        let running = store!
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                switch worker {
                case 0:
                    running.compactReadsIfDue()
                case 1:
                    for (i, id) in rest.enumerated() where i % 3 == 0 {
                        try running.track([PropertyKey("/truck/donuts")], by: id, at: running.registry.lastSeq)
                    }
                case 2:
                    for (i, id) in rest.enumerated() where i % 31 == 3 {
                        try running.clearReads(of: id)
                        if i % 2 == 0 { try running.track([PropertyKey("/truck/name")], by: id, at: 0) }
                    }
                default:
                    // Others than those read or cleared meanwhile.
                    for (i, id) in rest.enumerated() where i % 11 == 2 && i % 3 != 0 && i % 31 != 3 { _ = try running.deleteObserver(id) }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let known = Dictionary(uniqueKeysWithValues: ids.map { ($0, Self.reads(store!, $0)) })
        #expect(try Self.batchEntries(store!).count < count + rest.count)  // compacted
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        defer { store!.close() }
        var differing = 0
        for id in ids where Self.reads(store!, id) != known[id]! { differing += 1 }
        #expect(differing == 0)
        #expect(known.values.contains { $0?["/truck/donuts"] != nil })
        #expect(known.values.contains { $0 == ["/truck/name": 0] })
    }
}

extension Store {
    /// SQLite's fold of the read journal, now rather than on its thread's time.
    func foldReads(all: Bool = false) {
        reads.fold(all: all, writer)
    }

    /// SQLite's compaction of the stored reads, now rather than on its thread's time.
    func compactReadsIfDue() {
        reads.compactIfDue(writer)
    }
}
