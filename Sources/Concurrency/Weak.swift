/// A weak reference, for a `Locked` slot that must not keep its object alive
/// (a back reference that would otherwise close a cycle).
public struct Weak<Object: AnyObject> {
    public weak var object: Object?

    public init(_ object: Object? = nil) {
        self.object = object
    }
}

extension Weak: Sendable where Object: Sendable {}
