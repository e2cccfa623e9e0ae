/// A value that is not Sendable (a database connection, a cache of
/// values) shared by threads that each use it only under its lock, and
/// keep nothing of it when they let go: what makes that so is each use's
/// promise, not the compiler's check, so this type names the places.
public final class Exclusive<Value>: @unchecked Sendable {
    // Safe to share: every use holds the lock and lets no reference out.
    private let locked: Locked<Value>

    public init(_ value: Value) {
        locked = Locked(value)
    }

    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try locked.withLock(body)
    }
}
