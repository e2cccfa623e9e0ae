import Dispatch
import Foundation
import ModelObservation
@testable import ModelStore
import ModelStoreDatabases
@testable import ModelStoreSQLite
import Models
import Concurrency
import SQLiteStore
import Testing
import TestSupport

/// The file reads go to before the database: what it gives back after a
/// crash, and what it does not.
@Suite struct ReadJournalTests {
    static func read(_ observer: String, _ seq: Int64, _ paths: [String]) -> ObserverReads {
        ObserverReads(observer: observer, seq: seq, keys: paths.map(PropertyKey.init))
    }

    static func summary(_ reads: [JournaledRead]) -> [String] {
        reads.map { "\($0.observer)@\($0.seq):\($0.paths)" }
    }

    @Test func whatWasAppendedIsRecoveredByTheNextOpen() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        var journal: ReadJournal? = try ReadJournal(path: path)
        try journal!.append([Self.read("a", 3, ["/truck/name", "/truck/orderCount"]), Self.read("a", 5, ["/truck/donuts/x/name"])])
        try journal!.append([Self.read("b", 4, ["/truck/name"]), Self.read("c", 4, [])])
        #expect(journal!.activeSize > 0)
        // Not closed: as after a kill -9.
        journal = nil
        let again = try ReadJournal(path: path)
        #expect(Self.summary(again.recovered()) == ["a@3:/truck/name\n/truck/orderCount", "a@5:/truck/donuts/x/name", "b@4:/truck/name"])
    }

    @Test func aRecordCutShortOrGarbledEndsWhatIsRecovered() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        var journal: ReadJournal? = try ReadJournal(path: path)
        try journal!.append([Self.read("a", 1, ["/truck/name"]), Self.read("b", 2, ["/truck/orderCount"])])
        journal = nil
        // The second record's last byte changed: it and what follows are gone.
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path + "-1"))
        let first = 8 + 8 + (8 + 2 + 4 + 1 + "/truck/name".utf8.count)
        let secondEnd = first + 8 + (8 + 2 + 4 + 1 + "/truck/orderCount".utf8.count)
        try file.seek(toOffset: UInt64(secondEnd - 1))
        try file.write(contentsOf: Data("X".utf8))
        try file.close()
        #expect(Self.summary(try ReadJournal(path: path).recovered()) == ["a@1:/truck/name"])
    }

    @Test func aReadOfTheKeysBeforeItNamesTheirSetAndIsRecoveredWithThem() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        var journal: ReadJournal? = try ReadJournal(path: path)
        let truck = ["/truck/name", "/truck/orderCount"]
        try journal!.append([Self.read("a", 1, truck)])
        let written = journal!.activeSize
        try journal!.append([Self.read("b", 1, truck)])
        // Its seq, the id's length, the set's number and the id: no keys.
        #expect(journal!.activeSize - written == 8 + 8 + 2 + 4 + 1)
        try journal!.append([Self.read("c", 2, ["/x"]), Self.read("d", 3, truck), Self.read("e", 3, truck)])
        journal = nil
        var again: ReadJournal? = try ReadJournal(path: path)
        #expect(Self.summary(again!.recovered()) == [
            "a@1:/truck/name\n/truck/orderCount", "b@1:/truck/name\n/truck/orderCount", "c@2:/x",
            "d@3:/truck/name\n/truck/orderCount", "e@3:/truck/name\n/truck/orderCount",
        ])
        // An emptied file names no set it held: the keys are written again.
        try again!.resetAll()
        try again!.append([Self.read("f", 4, truck), Self.read("g", 4, truck)])
        try again!.resetAll()
        try again!.append([Self.read("h", 5, truck)])
        again = nil
        #expect(Self.summary(try ReadJournal(path: path).recovered()) == ["h@5:/truck/name\n/truck/orderCount"])
    }

    @Test func aFileOfTheEarlierFormatIsReadAsItWasWritten() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        // Generation 1, then one record: seq, the id's length, the id, the keys.
        var payload: [UInt8] = []
        withUnsafeBytes(of: Int64(7).littleEndian) { payload += $0 }
        withUnsafeBytes(of: UInt16(1).littleEndian) { payload += $0 }
        payload += Array("a/truck/name\n/truck/orderCount".utf8)
        let checksum = payload.withUnsafeBytes { ReadJournal.checksum($0, seed: 1) }
        var file: [UInt8] = []
        withUnsafeBytes(of: UInt64(1).littleEndian) { file += $0 }
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { file += $0 }
        withUnsafeBytes(of: checksum.littleEndian) { file += $0 }
        file += payload
        try Data(file).write(to: URL(fileURLWithPath: path + "-1"))
        #expect(Self.summary(try ReadJournal(path: path).recovered()) == ["a@7:/truck/name\n/truck/orderCount"])
    }

    @Test func anEmptiedFileGivesNothingBackAndTakesReadsAgain() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        var journal: ReadJournal? = try ReadJournal(path: path)
        try journal!.append([Self.read("a", 1, ["/truck/name"]), Self.read("b", 2, ["/truck/orderCount"])])
        try journal!.resetAll()
        // Shorter than what it overwrites: the old records after it stay in the file.
        try journal!.append([Self.read("c", 3, ["/x"])])
        journal = nil
        #expect(Self.summary(try ReadJournal(path: path).recovered()) == ["c@3:/x"])
    }

    @Test func foldingTakesTheIdleFileWhileReadsGoOnToTheOther() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        let journal = try ReadJournal(path: path)
        try journal.append([Self.read("a", 1, ["/truck/name"]), Self.read("b", 2, ["/truck/orderCount"])])
        journal.swap()
        try journal.append([Self.read("c", 3, ["/x"])])
        let first = journal.nextIdle(limit: 1)
        #expect(Self.summary(first.reads) == ["a@1:/truck/name"])
        // Until they are marked stored, the same come again.
        #expect(Self.summary(journal.nextIdle(limit: 1).reads) == ["a@1:/truck/name"])
        journal.folded(through: first.end)
        let second = journal.nextIdle(limit: 5)
        #expect(Self.summary(second.reads) == ["b@2:/truck/orderCount"])
        journal.folded(through: second.end)
        #expect(journal.nextIdle(limit: 5).reads.isEmpty)
        try journal.resetIdle()
        #expect(journal.idleIsEmpty)
        #expect(Self.summary(journal.recovered()) == ["c@3:/x"])
    }

    @Test func aSecondServerOnTheSameDatabaseIsRefused() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        let journal = try ReadJournal(path: path)
        #expect(throws: ReadJournal.InUse.self) { try ReadJournal(path: path) }
        journal.close(removing: true)
        #expect(!FileManager.default.fileExists(atPath: path + "-1"))
        _ = try ReadJournal(path: path)
    }

    /// A refused open closes its descriptor once: closed twice, the second
    /// close may take another thread's descriptor that got the same number
    /// in between (in a server, a connection's socket). Another thread opens
    /// and closes a file meanwhile, and its close must never find the file
    /// already closed.
    @Test func aRefusedOpenClosesItsDescriptorOnce() throws {
        let path = GroupCommitTests.temporaryFolder() + "/db-reads"
        let journal = try ReadJournal(path: path)
        defer { journal.close(removing: true) }
        let closedUnderneath = descriptorsClosedUnderneath {
            for _ in 0..<20_000 {
                #expect(throws: ReadJournal.InUse.self) { try ReadJournal(path: path) }
            }
        }
        #expect(closedUnderneath == 0)
    }

    @Test func aSecondStoreOnTheSameDatabaseIsRefusedAndTheFirstGoesOn() throws {
        let folder = GroupCommitTests.temporaryFolder()
        let store = try GroupCommitTests.makeStore(folder: folder)
        let observer = try store.createObserver()
        #expect(throws: ModelError.self) { try GroupCommitTests.makeStore(folder: folder) }
        try store.track([PropertyKey("/truck/name")], by: observer.id, at: 0)
        #expect(store.registry.observer(observer.id)?.reads.count == 1)
        store.close()
    }

    /// A store tracks first reads into the journal, folds them into the
    /// database when it closes, and a store opened on a journal a crash
    /// left behind stores its reads first.
    @Test func aStoreFoldsItsReadsAndRecoversThoseACrashLeft() throws {
        let folder = GroupCommitTests.temporaryFolder()
        let database = folder + "/observable.sqlite"
        var store: Store? = try GroupCommitTests.makeStore(folder: folder)
        let observer = try store!.createObserver()
        try store!.track([PropertyKey("/truck/name")], by: observer.id, at: store!.registry.lastSeq)
        #expect(FileManager.default.fileExists(atPath: database + "-reads-1"))
        store!.close()
        store = nil
        #expect(!FileManager.default.fileExists(atPath: database + "-reads-1"))
        store = try GroupCommitTests.makeStore(folder: folder)
        // Read into a value first: a failed expectation then shows the
        // paths, not a reflection of the whole store.
        let reopened = store!.registry.observer(observer.id)?.reads.keys.map(\.path)
        #expect(reopened == ["/truck/name"])
        store!.close()
        store = nil

        // A journal with a read in it, as a kill -9 leaves it.
        let journal = try ReadJournal(path: database + "-reads")
        try journal.append([Self.read(observer.id, 1, ["/truck/orderCount"]), Self.read("no-such-observer", 1, ["/truck/name"])])
        journal.close(removing: false)
        store = try GroupCommitTests.makeStore(folder: folder)
        let recovered = store!.registry.observer(observer.id)?.reads.keys.map(\.path).sorted()
        #expect(recovered == ["/truck/name", "/truck/orderCount"])
        store!.close()
    }

    /// With `synchronous=full` the reads are committed to the database
    /// before they count (those tracked together in one transaction), and
    /// no journal is kept.
    @Test func withSynchronousFullReadsAreCommittedAndNoJournalIsKept() throws {
        let folder = GroupCommitTests.temporaryFolder()
        var configuration = Store.Configuration(database: folder + "/observable.sqlite")
        configuration.durability = .powerLoss
        var store: Store? = try Store(configuration: configuration, catalog: SeedModels.catalog())
        let ids = try (0..<20).map { _ in try store!.createObserver().id }
        let keys = [PropertyKey("/truck/name"), PropertyKey("/truck/orderCount")]
        let failures = Locked(0)
        let tracking = store!
        DispatchQueue.concurrentPerform(iterations: ids.count) { i in
            do { try tracking.track(keys, by: ids[i], at: 0) } catch { failures.withLock { $0 += 1 } }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(!FileManager.default.fileExists(atPath: folder + "/observable.sqlite-reads-1"))
        let rows = try store!.writer.withLock { storage in
            try GroupCommitTests.database(storage).rows("SELECT COUNT(*), COUNT(DISTINCT shape_id) FROM observer_read_sets")
        }
        #expect(rows.first?.values == [.integer(20), .integer(1)])
        store!.close()
        store = try GroupCommitTests.makeStore(folder: folder)
        for id in ids {
            #expect(store!.registry.observer(id)?.reads.keys.map(\.path).sorted() == ["/truck/name", "/truck/orderCount"])
        }
        store!.close()
    }
}

