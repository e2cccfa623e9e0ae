import Dispatch
import Foundation
import ModelObservation
@testable import ModelStore
import Models
import Testing
import TestSupport

/// An observer that reads a collection has read the elements inserted later
/// (SPEC 3a), and reads survive a restart (SPEC 2): the reads an insert
/// implies are stored whenever the read of the collection was tracked.
@Suite struct ImpliedReadsTests {
    static let donuts = PropertyKey("/truck/donuts")

    /// The reads a store opened on `folder` loads for `observer`.
    static func storedReads(of observer: String, in folder: String) throws -> [PropertyKey: Int64] {
        let store = try GroupCommitTests.makeStore(folder: folder)
        defer { store.close() }
        return store.registry.observer(observer)?.reads ?? [:]
    }

    /// The read of the collection is tracked after the insert's commit has
    /// stored the reads it implies for the readers known then, and before
    /// the commit is published: the insert reaches the observer, and the
    /// reads it implies are stored for it too.
    @Test func readsImpliedByAnInsertAreStoredForAReadTrackedWhileTheInsertIsCommitted() throws {
        let folder = GroupCommitTests.temporaryFolder()
        let store = try GroupCommitTests.makeStore(folder: folder)
        let observer = try store.createObserver().id
        // The response the read comes from was built before the insert.
        let readAt = store.state.seq
        // The tracking's `now`, by which the write below sees it begin; near
        // the clock's, or closing the store would expire the observer.
        let marker = Date().timeIntervalSince1970 + 1.5
        let trackingDone = DispatchSemaphore(value: 0)
        // Committed in the same group as the insert, after it: its body runs
        // once the insert's changes (and the reads they imply) are written,
        // before the group is committed and published.
        let concurrentRead = PreparedWrite<Bool> { _ in
            Thread.detachNewThread {
                #expect(throws: Never.self) { try store.track([Self.donuts], by: observer, at: readAt, now: marker) }
                trackingDone.signal()
            }
            return (try? waitUntil { store.registry.observer(observer)?.lastUsed == marker }) != nil
        }
        let inserted = GroupCommitTests.Outcomes<Answer>()
        let probed = GroupCommitTests.Outcomes<Bool>()
        inserted.expect(1)
        probed.expect(1)
        try GroupCommitTests.whileCommitting(store) {
            GroupCommitTests.submit(store, try GroupCommitTests.donut("Cruller"), inserted, 0)
            GroupCommitTests.submit(store, concurrentRead, probed, 0)
        }
        let donut = try GroupCommitTests.order(in: try #require(try inserted.wait()[0]?.get()))
        #expect(try probed.wait()[0]?.get() == true, "the read was not tracked while the insert was committed")
        #expect(trackingDone.wait(timeout: .now() + 10) == .success)

        let name = PropertyKey("/truck/donuts/\(donut.id)/name")
        guard case .changes(let changes, _) = store.registry.poll(observer, since: readAt, limit: 100, now: marker).poll else {
            Issue.record("expected changes")
            return
        }
        #expect(changes.map(\.path) == ["/truck/donuts"])
        #expect(store.registry.observer(observer)?.reads[name] != nil)
        store.close()

        let stored = try Self.storedReads(of: observer, in: folder)
        #expect(stored[Self.donuts] == readAt)
        #expect(stored[name] == changes.first?.seq)
    }

    /// The read of the collection is tracked after the insert was published,
    /// from a response built before it: the registry replays the insert, and
    /// the reads it implies are stored with the read itself.
    @Test func readsImpliedByAnInsertReplayedForALateTrackedReadAreStored() throws {
        let folder = GroupCommitTests.temporaryFolder()
        let store = try GroupCommitTests.makeStore(folder: folder)
        let observer = try store.createObserver().id
        let readAt = store.state.seq
        let donut = try GroupCommitTests.order(in: try store.write(GroupCommitTests.donut("Cruller")))
        try store.track([Self.donuts], by: observer, at: readAt)
        let name = PropertyKey("/truck/donuts/\(donut.id)/name")
        #expect(store.registry.observer(observer)?.reads[name] == readAt + 1)
        store.close()

        let stored = try Self.storedReads(of: observer, in: folder)
        #expect(stored[Self.donuts] == readAt)
        #expect(stored[name] == readAt + 1)
    }
}
