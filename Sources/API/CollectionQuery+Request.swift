import HTTPServer
import JSON
import ModelObservation
import ModelStore

/// A query read as a request names it (SPEC §3d): `field=op.value` for
/// each condition, `sort`, and the page (`limit`, `after`, `order`).
extension CollectionQuery {
    /// The parameters a list read takes that are no condition.
    static let reserved: Set<String> = ["fields", "limit", "after", "order", "sort", "observer"]

    /// The query `request` asks of `resource`; nil when it names no
    /// condition and no sort (a plain read, or a page of one, as before).
    static func parse(_ request: HTTPRequest, of resource: Resource) throws(ModelError) -> CollectionQuery? {
        var conditions: [ShapeQuery.Condition] = []
        // In the order sent, each name once (its values in order).
        var names = request.query.keys.filter { !reserved.contains($0) }
        names.sort()
        for name in names {
            guard let field = resource.queryableField(name) else {
                if resource.field(name) != nil || resource.fieldNames.contains(name) || name == "id" {
                    throw .badRequest("\(name) is not a field \(resource.name) can be queried by; queryable: "
                        + resource.queryable.map(\.name).joined(separator: ", "))
                }
                throw .badRequest("\(resource.name) has no field \"\(name)\" to query by; queryable: "
                    + resource.queryable.map(\.name).joined(separator: ", ") + "; other parameters: fields, limit, after, order, sort")
            }
            for expression in request.queryValues(name) {
                do {
                    conditions.append(try ShapeQuery.Condition.parse(field: name, expression) { text throws(QueryError) in
                        try Self.value(text, of: field)
                    })
                } catch {
                    throw .badRequest(error.message)
                }
            }
        }
        var sort: String?
        var descending = false
        if request.repeatedQuery["sort"] != nil {
            throw .badRequest("sort names one field (-field for descending), not several")
        }
        if let text = request.query["sort"] {
            let name = text.hasPrefix("-") ? String(text.dropFirst()) : text
            guard resource.queryableField(name) != nil else {
                throw .badRequest("sort must name a field \(resource.name) can be queried by (-field for descending), not \"\(text)\"; "
                    + "queryable: " + resource.queryable.map(\.name).joined(separator: ", "))
            }
            sort = name
            descending = text.hasPrefix("-")
        }
        guard !conditions.isEmpty || sort != nil else { return nil }
        if sort != nil, let order = request.query["order"] {
            throw .badRequest("order=\(order) cannot go with sort: sort=field sorts ascending and sort=-field descending")
        }
        // Limit and order as a page has them; `after` is a position
        // without a sort and the cursor of a Link with one.
        let page = try Page.parse { $0 == "after" && sort != nil ? nil : request.query[$0] }
        if sort == nil { descending = page?.descending ?? false }
        var read = CollectionQuery(query: ShapeQuery(conditions: conditions, sort: sort, descending: descending), limit: page?.limit)
        if let after = request.query["after"] {
            if sort != nil {
                guard let key = QueryCursor.key(after), (key.value == nil) == (sort == nil) else {
                    throw .badRequest("after must be the cursor of a page's Link: rel=\"next\", not \"\(after)\"")
                }
                read.after = key
            } else if let position = page?.after {
                read.after = SortKey(value: nil, position: position)
            }
        }
        return read
    }

    /// The value `text` names for `field`, of its type.
    static func value(_ text: String, of field: Resource.QueryableField) throws(QueryError) -> JSONValue {
        switch field.kind {
        case .text:
            return .string(text)
        case .integer:
            let digits = text.hasPrefix("-") ? text.dropFirst() : text[...]
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int64(text) else {
                throw QueryError(field: field.name, "\(field.name) is a whole number: \"\(text)\" is not one")
            }
            return .int(number)
        case .number:
            guard let value = try? JSONParser.parse(text), value.isNumber else {
                throw QueryError(field: field.name, "\(field.name) is a number: \"\(text)\" is not one")
            }
            return value
        case .boolean:
            switch text {
            case "true": return .bool(true)
            case "false": return .bool(false)
            default: throw QueryError(field: field.name, "\(field.name) is true or false, not \"\(text)\"")
            }
        }
    }
}

extension JSONValue {
    var isNumber: Bool {
        switch self {
        case .int, .double: true
        default: false
        }
    }
}

