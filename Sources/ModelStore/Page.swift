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

    /// The page the query asks for with `limit`, `after` and `order`
    /// (each under `prefix`: `orders.limit` for the orders shown in the
    /// truck); nil when it names none of them (the whole collection, as
    /// without pages).
    public static func parse(prefix: String = "", _ query: (String) -> String?) throws(ModelError) -> Page? {
        let limit = query(prefix + "limit"), after = query(prefix + "after"), order = query(prefix + "order")
        guard limit != nil || after != nil || order != nil else { return nil }
        var page = Page()
        if let limit {
            guard let number = Int(limit), limits.contains(number) else {
                throw .badRequest("\(prefix)limit must be a whole number from 1 to 1000, not \"\(limit)\"")
            }
            page.limit = number
        }
        if let after {
            guard let number = Int64(after), number >= 0 else {
                throw .badRequest("\(prefix)after must be the cursor of a page's Link: rel=\"next\" (a whole number), not \"\(after)\"")
            }
            page.after = number
        }
        if let order {
            switch order {
            case "asc": page.descending = false
            case "desc": page.descending = true
            default: throw .badRequest("\(prefix)order must be asc (oldest first) or desc (newest first), not \"\(order)\"")
            }
        }
        return page
    }

    /// The query of the page after this one, which ended at `position`.
    func next(after position: Int64, prefix: String = "") -> String {
        var query = ""
        if let limit { query += "\(prefix)limit=\(limit)&" }
        if descending { query += "\(prefix)order=desc&" }
        return query + "\(prefix)after=\(position)"
    }
}
