#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with a condition variable on the monotonic clock: for a
/// thread that waits until something changes or a deadline passes.
public final class ConditionLock: @unchecked Sendable {
    // Safe to share: the mutex and condition are made for it.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines are on the monotonic clock, as `ServerClock.now` is.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    public func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a `signal` or `broadcast`; call holding the lock (inside `withLock`).
    public func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// As `wait`, but no later than `deadline`.
    public func wait(until deadline: ServerClock.Instant) {
        var time = deadline.timespec
        pthread_cond_timedwait(condition, mutex, &time)
    }

    public func signal() {
        pthread_cond_signal(condition)
    }

    public func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
