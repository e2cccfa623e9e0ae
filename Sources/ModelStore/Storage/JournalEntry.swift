/// One entry of the shared journal: what one ordered transaction did.
public struct JournalEntry: Sendable {
    public enum Kind: String, Sendable {
        case insert = "i", update = "u", delete = "d", changes = "c"
        case observer = "o", unobserve = "x", clear = "r", track = "t"
    }

    public var version: Int64
    public var kind: Kind
    /// The table's number (rows).
    public var table: Int = -1
    /// A row's or an observer's id.
    public var id: String = ""
    /// A nested row's parent's id, an observer's owner.
    public var parent: String?
    /// A row's position, the first seq of changes, an observer's cursor, a read's seq.
    public var first: Int64 = 0
    /// The last seq of changes, an observer's TTL.
    public var last: Int64 = 0
    /// A row's values (a JSON array), a read's keys (one per line), an observer's last use.
    public var body: String?

    public init(version: Int64, kind: Kind) {
        self.version = version
        self.kind = kind
    }
}
