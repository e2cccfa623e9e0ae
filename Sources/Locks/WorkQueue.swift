#if canImport(Glibc)
import Glibc
#endif

/// Items handed from many threads to one consumer, which takes everything
/// that has gathered at once (a pthread mutex and condition variable).
public final class WorkQueue<Item>: @unchecked Sendable {
    // Safe to share: `items` and `closed` are only touched under `mutex`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var items: [Item] = []
    private var closed = false
    private var waiting = false

    public init() {
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

    /// Adds `item`; returns false (and keeps nothing) once the queue is closed.
    public func push(_ item: Item) -> Bool {
        pthread_mutex_lock(mutex)
        guard !closed else {
            pthread_mutex_unlock(mutex)
            return false
        }
        items.append(item)
        // Only a consumer asleep on the condition needs the signal; one that
        // is busy takes the item when it comes back.
        let wake = waiting
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_signal(condition) }
        return true
    }

    /// Every item that has gathered, oldest first, up to `limit`; waits while
    /// there is none. Returns nil once the queue is closed and empty.
    public func take(limit: Int) -> [Item]? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while items.isEmpty {
            if closed { return nil }
            waiting = true
            pthread_cond_wait(condition, mutex)
            waiting = false
        }
        if items.count <= limit {
            var taken: [Item] = []
            swap(&taken, &items)
            return taken
        }
        defer { items.removeFirst(limit) }
        return Array(items.prefix(limit))
    }

    /// Refuses new items; the consumer still takes those already queued.
    public func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(condition)
    }
}
