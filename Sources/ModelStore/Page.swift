/// A page of a collection: at most `limit` elements (all when nil), in
/// creation order or newest first, after the element whose position is
/// `after` (a keyset cursor, never an offset: elements made or deleted
/// meanwhile move no page).
public struct Page: Sendable, Equatable {
    public static let limits = 1...1000

    public var limit: Int?
    public var after: Int64?
    public var descending: Bool

    public init(limit: Int? = nil, after: Int64? = nil, descending: Bool = false) {
        self.limit = limit
        self.after = after
        self.descending = descending
    }

    /// The page after this one, which ended at `position`.
    func next(after position: Int64) -> Page {
        Page(limit: limit, after: position, descending: descending)
    }
}
