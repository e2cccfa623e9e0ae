import Concurrency

/// Who commits writes right now, and the writes waiting for a commit.
///
/// A write arriving when nobody commits, and nobody has for a while, is
/// committed at once by the thread that brought it (no hand-over, no
/// waiting). One arriving while a commit runs, or right after one (the
/// server is busy with writes), waits here: the committing thread takes
/// everything that gathered and commits it as one group, for as long as
/// writes keep gathering, while the threads that brought them go on
/// serving. (Without the second rule, a server whose connections all sit on
/// one worker thread committed every write alone on it: half the writes a
/// second.) Invariant: writes wait here only while someone commits.
final class WriteQueue: @unchecked Sendable {
    // Safe to share: every field is only touched under `lock`.
    enum Committer {
        case nobody
        /// The thread that brought a write is committing it.
        case caller
        /// The committing thread is taking the queue.
        case committingThread
    }

    private let lock = ConditionLock()
    private var items: [any QueuedWrite] = []
    private var committer = Committer.nobody
    private var closed = false
    /// When the last commit ended (monotonic nanoseconds).
    private var idleSince: UInt64 = 0
    /// A write this soon after a commit waits for the committing thread.
    static let busyWindow: UInt64 = 50_000
    /// Hands even a lone write to the committing thread (when its caller
    /// can wait): for a shared database, where a commit may wait for other
    /// instances' and the caller's thread has other connections to serve.
    private let handsOver: Bool

    init(handsOver: Bool = false) {
        self.handsOver = handsOver
    }

    /// What `enter` decided.
    enum Entry {
        /// Nobody was committing: the caller commits its write now, then
        /// calls `leave`.
        case commitNow
        /// The write waits for the committing thread.
        case queued
        /// The caller could not wait (`wait` said no): it commits alone.
        case commitAlone
        /// The queue is closed.
        case closed
    }

    /// Lets the caller commit now when nobody commits; otherwise calls
    /// `wait` (still under the lock, so no commit can end in between) and,
    /// when it agrees, queues `write`.
    func enter(_ write: any QueuedWrite, wait: () -> Bool) -> Entry {
        lock.withLock {
            if closed { return .closed }
            if case .nobody = committer {
                let busy = ServerClock.now.nanoseconds &- idleSince < Self.busyWindow
                guard handsOver || busy, wait() else {
                    committer = .caller
                    return .commitNow
                }
                items.append(write)
                committer = .committingThread
                lock.broadcast()
                return .queued
            }
            guard wait() else { return .commitAlone }
            items.append(write)
            return .queued
        }
    }

    /// Called by a caller that committed after `.commitNow`: hands what
    /// gathered meanwhile to the committing thread.
    func leave() {
        let wake: Bool = lock.withLock {
            if items.isEmpty {
                committer = .nobody
                idleSince = ServerClock.now.nanoseconds
                return closed
            }
            committer = .committingThread
            return true
        }
        if wake { lock.broadcast() }
    }

    /// For the committing thread: every write that has gathered, oldest
    /// first, up to `limit`, once it is its turn; nil when the queue is
    /// closed and nobody commits.
    func take(limit: Int) -> [any QueuedWrite]? {
        lock.withLock {
            while true {
                if case .committingThread = committer {
                    if items.isEmpty {
                        committer = .nobody
                        idleSince = ServerClock.now.nanoseconds
                        lock.broadcast()
                    } else if items.count <= limit {
                        var taken: [any QueuedWrite] = []
                        swap(&taken, &items)
                        return taken
                    } else {
                        defer { items.removeFirst(limit) }
                        return Array(items.prefix(limit))
                    }
                }
                if closed, case .nobody = committer { return nil }
                lock.wait()
            }
        }
    }

    /// Refuses new writes; those already queued are still committed.
    func close() {
        lock.withLock { closed = true }
        lock.broadcast()
    }
}
