#if canImport(Glibc)
import Glibc
#endif

/// A named thread running one long-lived loop (the commit thread, the
/// long-poll deadlines, housekeeping, the job scheduler), and the one way
/// such a thread is stopped: `stop()` asks it to end, wakes it from
/// `sleep`, and waits until its body has returned.
public final class ServiceThread: @unchecked Sendable {
    // Safe to share: `stopping` and `finished` are only touched under `lock`.
    public let name: String
    private let lock = ConditionLock()
    private var stopping = false
    private var finished = false
    /// A `wake` not yet taken by a `sleep`: kept, so that a wake just
    /// before the sleep begins is not lost.
    private var woken = false

    private init(name: String) {
        self.name = name
    }

    /// Starts a thread that runs `body` with itself, to ask `isStopping` and to `sleep`.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable (ServiceThread) -> Void) -> ServiceThread {
        let thread = ServiceThread(name: name)
        let box = Unmanaged.passRetained(Start(thread: thread, body: body)).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(&handle, nil, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            ServiceThread.nameCurrentThread(start.thread.name)
            start.body(start.thread)
            start.thread.lock.withLock { start.thread.finished = true }
            start.thread.lock.broadcast()
            return nil
        }, box)
        precondition(rc == 0, "cannot start thread \(name)")
        pthread_detach(handle)
        return thread
    }

    private final class Start {
        let thread: ServiceThread
        let body: @Sendable (ServiceThread) -> Void
        init(thread: ServiceThread, body: @escaping @Sendable (ServiceThread) -> Void) {
            self.thread = thread
            self.body = body
        }
    }

    /// Whether `stop` was called: the body's loop ends when it is.
    public var isStopping: Bool { lock.withLock { stopping } }

    /// Sleeps until `deadline`, or less when `stop` is called or `wake` is.
    /// Returns whether the thread is stopping.
    @discardableResult
    public func sleep(until deadline: ServerClock.Instant) -> Bool {
        lock.withLock {
            if !stopping && !woken { lock.wait(until: deadline) }
            woken = false
            return stopping
        }
    }

    /// Sleeps for `seconds`, or less when the thread is stopped or woken.
    @discardableResult
    public func sleep(seconds: Double) -> Bool {
        sleep(until: ServerClock.now.advanced(by: .milliseconds(Int64(seconds * 1000))))
    }

    /// Ends a `sleep` early (new work is due sooner).
    public func wake() {
        lock.withLock { woken = true }
        lock.broadcast()
    }

    /// Asks the body to end and waits until it has (at most `timeout`, nil
    /// for no limit). Returns whether it ended.
    @discardableResult
    public func stop(timeout: Duration? = nil) -> Bool {
        lock.withLock { stopping = true }
        lock.broadcast()
        return join(timeout: timeout)
    }

    /// Waits until the body has returned, without asking it to (at most `timeout`).
    @discardableResult
    public func join(timeout: Duration? = nil) -> Bool {
        let deadline = timeout.map { ServerClock.now.advanced(by: $0) }
        return lock.withLock {
            while !finished {
                if let deadline {
                    if ServerClock.now >= deadline { return false }
                    lock.wait(until: deadline)
                } else {
                    lock.wait()
                }
            }
            return true
        }
    }

    /// Waits, in steps of `step` seconds, until `condition` holds or
    /// `timeout` has passed (nil: no limit); returns whether it held. For a
    /// stop that waits on what other threads finish (requests in flight).
    @discardableResult
    public static func wait(until condition: () -> Bool, timeout: Duration?, step: Double = 0.001) -> Bool {
        let end = timeout.map { ServerClock.now.advanced(by: $0) }
        while !condition() {
            if let end, ServerClock.now >= end { return false }
            var request = timespec(tv_sec: Int(step), tv_nsec: Int((step - Double(Int(step))) * 1_000_000_000))
            var remaining = timespec()
            while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
        }
        return true
    }

    /// Names the calling thread (shown by `top -H`, `ps -L`, debuggers).
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
