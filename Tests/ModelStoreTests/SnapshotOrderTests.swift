import Concurrency
import Dispatch
import Foundation
import ModelObservation
@testable import ModelStore
import Testing

/// A commit publishes its changes to the registry, then makes its state
/// current. A cursor a poll answers in between must not be ahead of the
/// state a read then sees.
@Suite struct SnapshotOrderTests {
    @Test func aReadAfterAPollSeesTheStateOfThePollsCursor() throws {
        let store = try GroupCommitTests.makeStore()
        defer { store.close() }
        let id = try store.createObserver().id
        let cursor = try #require(store.registry.observer(id)?.cursor)
        _ = store.registry.track(id, keys: [PropertyKey("/truck/orderCount")], at: store.snapshot.state.seq, now: 0)
        // The next commit is held between publishing and showing its state.
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        store.afterPublishing.withLock { hook in
            hook = {
                held.signal()
                release.wait()
            }
        }
        let written = DispatchSemaphore(value: 0)
        // Threads of their own: the dispatch pool may have no thread free.
        Thread {
            _ = try? store.write(try GroupCommitTests.order(GroupCommitTests.glazed, 1))
            written.signal()
        }.start()
        held.wait()
        store.afterPublishing.withLock { $0 = nil }
        // The registry has the changes: a poll answers their cursor.
        let poll = store.registry.pollAsConsumer(id, since: cursor, limit: 100, coalesce: false, now: 0, parking: .never).poll
        guard case .changes(let changes, let answered) = poll else {
            Issue.record("the poll answered \(poll)")
            release.signal()
            return
        }
        #expect(!changes.isEmpty)
        // A read now waits for that state rather than showing an older one.
        let seen = Locked<Int64?>(nil)
        let read = DispatchSemaphore(value: 0)
        Thread {
            let seq = store.snapshot.state.seq
            seen.withLock { $0 = seq }
            read.signal()
        }.start()
        let early = read.wait(timeout: .now() + 0.3)
        #expect(early == .timedOut, "a read showed the state at \(seen.withLock { $0 } ?? -1) while the poll's cursor was \(answered)")
        release.signal()
        if early == .timedOut { read.wait() }
        written.wait()
        #expect((seen.withLock { $0 } ?? -1) >= answered)
    }
}
