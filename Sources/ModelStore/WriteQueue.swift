import Concurrency
#if canImport(Glibc)
import Glibc
#endif

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
    // Safe to share: every field is only touched under `mutex`.
    enum Committer {
        case nobody
        /// The thread that brought a write is committing it.
        case caller
        /// The committing thread is taking the queue.
        case committingThread
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
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
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
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
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if closed { return .closed }
        if case .nobody = committer {
            let busy = ServerClock.now.nanoseconds &- idleSince < Self.busyWindow
            guard handsOver || busy, wait() else {
                committer = .caller
                return .commitNow
            }
            items.append(write)
            committer = .committingThread
            pthread_cond_broadcast(condition)
            return .queued
        }
        guard wait() else { return .commitAlone }
        items.append(write)
        return .queued
    }

    /// Called by a caller that committed after `.commitNow`: hands what
    /// gathered meanwhile to the committing thread.
    func leave() {
        pthread_mutex_lock(mutex)
        if items.isEmpty {
            committer = .nobody
            idleSince = ServerClock.now.nanoseconds
            pthread_mutex_unlock(mutex)
            if closed { pthread_cond_broadcast(condition) }
            return
        }
        committer = .committingThread
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(condition)
    }

    /// For the committing thread: every write that has gathered, oldest
    /// first, up to `limit`, once it is its turn; nil when the queue is
    /// closed and nobody commits.
    func take(limit: Int) -> [any QueuedWrite]? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if case .committingThread = committer {
                if items.isEmpty {
                    committer = .nobody
                    idleSince = ServerClock.now.nanoseconds
                    pthread_cond_broadcast(condition)
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
            pthread_cond_wait(condition, mutex)
        }
    }

    /// Refuses new writes; those already queued are still committed.
    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(condition)
    }
}
