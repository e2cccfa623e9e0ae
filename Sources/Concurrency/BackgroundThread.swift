#if canImport(Glibc)
import Glibc
#endif

/// A named thread running one closure: for the few long-lived loops (the
/// long-poll deadlines, housekeeping, the job scheduler), without Foundation.
public enum BackgroundThread {
    final class Box {
        let name: String
        let body: () -> Void
        init(_ name: String, _ body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts a detached thread that runs `body`.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            BackgroundThread.nameCurrentThread(box.name)
            box.body()
            return nil
        }, box)
        precondition(rc == 0, "cannot start thread \(name)")
        pthread_detach(thread)
    }

    /// Names the calling thread (shown by `top -H`, `ps -L`, debuggers).
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// Sleeps in steps of `step` seconds until `condition` holds or
    /// `timeout` has passed (nil: no limit); returns whether it held. For
    /// waiting on another thread to finish its part of a stop.
    @discardableResult
    public static func sleep(until condition: () -> Bool, timeout: Duration?, step: Double = 0.001) -> Bool {
        let clock = ContinuousClock()
        let end = timeout.map { clock.now + $0 }
        while !condition() {
            if let end, clock.now >= end { return false }
            sleep(seconds: step)
        }
        return true
    }

    /// Sleeps the calling thread.
    public static func sleep(seconds: Double) {
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }
}
