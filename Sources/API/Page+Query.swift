import ModelStore

/// A page as a query names it (`limit`, `after`, `order`), and the `Link`
/// (RFC 8288) to the next one.
extension Page {
    /// The page the query asks for with `limit`, `after` and `order`
    /// (each under `prefix`: `orders.limit` for the orders shown in the
    /// truck); nil when it names none of them (the whole collection, as
    /// without pages).
    static func parse(prefix: String = "", _ query: (String) -> String?) throws(ModelError) -> Page? {
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

    /// The query that asks for this page: `limit=2&order=desc&after=5`.
    var query: String {
        var query = ""
        if let limit { query += "limit=\(limit)&" }
        if descending { query += "order=desc&" }
        return query + "after=\(after ?? 0)"
    }
}

extension NextPage {
    /// The `Link` header value: the collection's own path with the
    /// fields selected and the page, titled with the member it was
    /// shown under (`orders` in the truck).
    var link: String {
        let fields = fields.map { "fields=" + $0.joined(separator: ",") + "&" } ?? ""
        if let query {
            let limit = page.limit.map { "&limit=\($0)" } ?? ""
            return "<\(collection)?\(fields)\(query)\(limit)&after=\(cursor ?? String(page.after ?? 0))>; rel=\"next\""
        }
        let target = "<\(collection)?\(fields)\(page.query)>; rel=\"next\""
        return member.map { target + "; title=\"\($0)\"" } ?? target
    }
}
