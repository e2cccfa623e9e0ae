import Synchronization

/// An observer's identity and what the registry keeps of it.
public struct ObserverSnapshot: Sendable, Equatable {
    public let id: String
    /// Property keys read, each with the `seq` at which it was read: changes
    /// at or before that `seq` were already visible to the reader.
    public var reads: [PropertyKey: Int64]
    /// The cursor last answered to this observer (the default `since`).
    public var cursor: Int64
    public var ttlSeconds: Int
    /// Seconds since 1970 of the last use.
    public var lastUsed: Double
    /// The last use as last saved (`lastUsed` when loaded or created).
    public var savedUse: Double
    /// The client that created it, as the API names clients (a digest of
    /// its token, or its address); nil for one created before owners were
    /// kept. Its observers count toward that client's quota.
    public var owner: String?
    /// Where the registry's reverse index finds it (`Slots`); not part of
    /// what it is.
    var slot: Int32 = -1
    /// The registry's group of observers whose first read was the same
    /// (`RegistryCore.Group`), -1 for none.
    var group: Int32 = -1
    /// The keys of the last read tracked, all in `reads`: a read of the
    /// same array again (a kept answer's) adds nothing, found without
    /// looking each key up. Emptied with `reads`.
    var lastRead: [PropertyKey] = []
    /// The shapes among `reads`, parsed (`receives` looks at them for
    /// every change); made again by the registry when it takes `reads`.
    var shapes: [ShapeRead] = []
    /// The bytes the registry estimates it holds: itself, and the reads
    /// of a table of its own (`MemoryEstimate`).
    var bytes = 0
    /// Whether its table of reads is its own: false while it shares its
    /// group's (`joinFirstRead`), which it copies when it reads more.
    var ownsReads = true

    public init(id: String, reads: [PropertyKey: Int64] = [:], cursor: Int64, ttlSeconds: Int, lastUsed: Double, owner: String? = nil) {
        self.id = id
        self.reads = reads
        self.cursor = cursor
        self.ttlSeconds = ttlSeconds
        self.lastUsed = lastUsed
        savedUse = lastUsed
        self.owner = owner
        shapes = Self.shapes(in: reads)
    }

    /// The shapes among `reads`, each with the `seq` it was read at.
    static func shapes(in reads: [PropertyKey: Int64]) -> [ShapeRead] {
        var shapes: [ShapeRead] = []
        for (key, seq) in reads where key.isShape {
            if let shape = Shape(key: key) { shapes.append(ShapeRead(shape: shape, seq: seq)) }
        }
        return shapes
    }

    /// Records a read of `key` at `seq`, a shape's among `shapes` too.
    mutating func setRead(_ key: PropertyKey, at seq: Int64) {
        reads[key] = seq
        if key.isShape, let shape = Shape(key: key) { shapes.append(ShapeRead(shape: shape, seq: seq)) }
    }

    /// The shapes it reads, for `GET /observers/{id}`.
    public var shapesRead: [Shape] { Self.shapes(in: reads).map(\.shape) }

    public static func == (a: ObserverSnapshot, b: ObserverSnapshot) -> Bool {
        a.id == b.id && a.reads == b.reads && a.cursor == b.cursor && a.ttlSeconds == b.ttlSeconds
            && a.lastUsed == b.lastUsed && a.savedUse == b.savedUse && a.owner == b.owner
    }

    /// Whether a use now is worth saving on its own: once the saved use is
    /// a quarter of the TTL old. Saved that often, an observer in use never
    /// looks expired to what reads the saved use (another instance, or this
    /// one after a restart), and a busy observer is not rewritten every
    /// second.
    func useIsStale(now: Double) -> Bool {
        now - savedUse >= Double(ttlSeconds) / 4
    }

    /// Whether this observer receives `change`: it read one of the change's
    /// keys before the change was committed.
    public func receives(_ change: Change) -> Bool {
        let byKey = change.keys.contains { key in
            guard let readAt = reads[key] else { return false }
            return readAt < change.seq
        }
        if byKey || shapes.isEmpty { return byKey }
        for place in change.places {
            for read in shapes where read.seq < change.seq && read.shape.collection == place.collection && read.shape.covers(place) {
                return true
            }
        }
        return false
    }
}

/// A shape an observer read, and the `seq` it read it at.
struct ShapeRead: Sendable {
    let shape: Shape
    let seq: Int64
}

/// Something waiting for an observer's next change: a parked long-poll,
/// or an event stream with nothing to send.
///
/// Its state is the registry's own: the feed subclasses it to carry what
/// answers it (a suspended connection, a stream), and the registry calls
/// none of that code, under its lock or elsewhere. `@unchecked Sendable`:
/// what it holds here is atomic; a subclass answers for its own.
open class ChangeWaiter: @unchecked Sendable {
    public init() {}
}

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
