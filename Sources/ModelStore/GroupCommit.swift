import Concurrency

/// Group commit: the writes waiting for a commit, the thread that commits
/// what gathers while another commit runs, the count of what was
/// committed, and who is told which observers to wake after a commit.
///
/// It decides who commits a write and when (`WriteQueue`); the store
/// commits each batch (`Store.commit`).
final class GroupCommit: Sendable {
    /// Most writes committed in one transaction.
    static let batchLimit = 128

    /// Writes waiting for the next group commit.
    private let queue: WriteQueue
    /// Commits the writes that gather while another commit runs (set once, in `start`).
    private let committer = Locked<ServiceThread?>(nil)
    private let commits = Locked<(transactions: Int64, writes: Int64)>((0, 0))
    private let wake = Locked<Store.Wake?>(nil)

    /// `handsOver`: even a lone write goes to the committing thread when its
    /// caller can wait (a shared database; see `WriteQueue`).
    init(handsOver: Bool) {
        queue = WriteQueue(handsOver: handsOver)
    }

    /// Starts the commit thread: it commits what gathers through `store`,
    /// and ends once the queue is closed and empty.
    func start(committingThrough store: Store) {
        let thread = ServiceThread.start(name: "observable.commit") { [weak store, queue] _ in
            while let batch = queue.take(limit: Self.batchLimit) {
                guard let store else {
                    for write in batch {
                        write.fail(ModelError(.unavailable, "the store is closed"))
                        write.finish(nil)
                    }
                    continue
                }
                store.commit(batch)
            }
        }
        committer.withLock { $0 = thread }
    }

    /// Commits `write` with `commit` on this thread when nobody is
    /// committing, or when the caller cannot wait, and returns true: its
    /// outcome is then the caller's to read. Otherwise queues it for the
    /// committing thread, which hands the outcome to its completion, and
    /// returns false.
    func commitOrQueue(_ write: any QueuedWrite, wait: () -> Bool, commit: ([any QueuedWrite]) -> Void) -> Bool {
        switch queue.enter(write, wait: wait) {
        case .queued:
            return false
        case .commitNow:
            write.answeredByCaller()
            commit([write])
            queue.leave()
        case .commitAlone:
            write.answeredByCaller()
            commit([write])
        case .closed:
            write.answeredByCaller()
            write.fail(ModelError(.unavailable, "the server is stopping"))
        }
        return true
    }

    /// Refuses new writes; those already queued are still committed.
    func close() {
        queue.close()
    }

    /// Waits until the commit thread has ended (after `close`, once the
    /// writes queued are committed).
    func join() {
        committer.withLock { $0 }?.join()
    }

    /// Transactions committed by writes, and the writes committed in them.
    var counts: (transactions: Int64, writes: Int64) { commits.withLock { $0 } }

    /// Counts a transaction that committed `writes` writes.
    func counted(writes: Int64) {
        commits.withLock { $0.transactions += 1; $0.writes += writes }
    }

    /// Who is told about observers to wake after each commit.
    var wakeHandler: Store.Wake? { wake.withLock { $0 } }

    func onWake(_ handler: @escaping Store.Wake) {
        wake.withLock { $0 = handler }
    }
}
