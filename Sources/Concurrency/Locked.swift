#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a pthread mutex.
///
/// `Synchronization.Mutex` uses priority-inheritance futexes on Linux, whose
/// contended path goes through the kernel's rt_mutex and cost a quarter of
/// the CPU of a write-heavy load; a plain pthread mutex does not.
public final class Locked<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// Safe to share when the value is: it is only touched between lock and
// unlock, so a value that may cross threads is never touched by two at once.
extension Locked: @unchecked Sendable where Value: Sendable {}

