import Synchronization

/// A parked long-poll: answered once, by whichever of a wake, its
/// deadline, a newer poll or a deletion claims it first (two of them must
/// not both move the cursor when only one answer reaches the client).
open class PollWaiter: ChangeWaiter {
    public let observer: String
    public let since: Int64?
    public let limit: Int
    public let coalesce: Bool
    /// `expiredFlag` and `claimedFlag`, in one atomic word.
    private let flags = Atomic<UInt8>(0)
    private static let expiredFlag: UInt8 = 1
    private static let claimedFlag: UInt8 = 2

    public init(observer: String, since: Int64?, limit: Int, coalesce: Bool) {
        self.observer = observer
        self.since = since
        self.limit = limit
        self.coalesce = coalesce
    }

    /// Set once its deadline passed (or the server stops): a wake does not
    /// park it again from then on.
    public final var isExpired: Bool { flags.load(ordering: .acquiring) & Self.expiredFlag != 0 }

    /// Marks it expired, before its deadline's answer is worked out.
    public final func expire() {
        flags.bitwiseOr(Self.expiredFlag, ordering: .acquiringAndReleasing)
    }

    /// Whether one of those who answer it has taken the answering on itself.
    public final var isClaimed: Bool { flags.load(ordering: .acquiring) & Self.claimedFlag != 0 }

    /// Takes the answering on oneself; false when another has taken it.
    public final func claim() -> Bool {
        flags.bitwiseOr(Self.claimedFlag, ordering: .acquiringAndReleasing).oldValue & Self.claimedFlag == 0
    }

    /// Gives the claim back (a wake that parked it again).
    final func unclaim() {
        flags.bitwiseAnd(~Self.claimedFlag, ordering: .acquiringAndReleasing)
    }
}
