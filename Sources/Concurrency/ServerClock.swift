#if canImport(Glibc)
import Glibc
#endif

/// The server's one clock: a monotonic one for deadlines and intervals, and
/// the wall clock for what is stored (an observer's last use).
public enum ServerClock {
    /// A point on the monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds.
    public struct Instant: Comparable, Sendable {
        public let nanoseconds: UInt64

        public init(nanoseconds: UInt64) {
            self.nanoseconds = nanoseconds
        }

        public func advanced(by duration: Duration) -> Instant {
            let (seconds, attoseconds) = duration.components
            let delta = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            return Instant(nanoseconds: delta >= 0 ? nanoseconds &+ UInt64(delta) : nanoseconds &- UInt64(-delta))
        }

        /// The time from `self` to `other` (negative when `other` is earlier).
        public func duration(to other: Instant) -> Duration {
            .nanoseconds(Int64(bitPattern: other.nanoseconds &- nanoseconds))
        }

        public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

        var timespec: Glibc.timespec {
            Glibc.timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        }
    }

    /// Now, on the monotonic clock.
    public static var now: Instant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Instant(nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
    }

    /// Now, in seconds since 1970 (wall clock).
    public static var wallSeconds: Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }
}
