import Synchronization

/// An open event stream of an observer's changes: parked whenever it has
/// nothing to send, and the observer's one consumer while it is open.
open class StreamWaiter: ChangeWaiter {
    /// `closedFlag` and `supersededFlag`, in one atomic word.
    private let flags = Atomic<UInt8>(0)
    private static let closedFlag: UInt8 = 1
    private static let supersededFlag: UInt8 = 2

    public override init() {}

    /// False once `close()` was called: it is not parked from then on.
    public final var isOpen: Bool { flags.load(ordering: .acquiring) & Self.closedFlag == 0 }

    /// Marks it closed, before it is withdrawn (`closeStream`): a delivery
    /// under way then does not park it again.
    public final func close() {
        flags.bitwiseOr(Self.closedFlag, ordering: .acquiringAndReleasing)
    }

    /// Set, under the registry's lock, when a poll or another stream of its
    /// observer takes its place: it answers nothing more from then on, so
    /// the cursor it moves is never newer than theirs, even when it was
    /// delivering at the moment (not parked, so not found as the waiter).
    public final var isSuperseded: Bool { flags.load(ordering: .acquiring) & Self.supersededFlag != 0 }

    final func supersede() {
        flags.bitwiseOr(Self.supersededFlag, ordering: .acquiringAndReleasing)
    }
}
