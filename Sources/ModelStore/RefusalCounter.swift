import Synchronization

/// The refusals of one quota, counted.
public final class RefusalCounter: Sendable {
    private let count = Atomic<Int>(0)

    public init() {}

    public func record() {
        count.add(1, ordering: .relaxed)
    }

    public var value: Int64 { Int64(count.load(ordering: .relaxed)) }
}
