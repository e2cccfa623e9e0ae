/// One header field of a request.
struct HeaderField: Sendable {
    let name: String
    let value: String
}

/// A complete request: method, path, query, headers and body.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The path, percent-decoded, without the query.
    public let path: String
    /// Query parameters; a repeated name keeps its last value.
    public let query: [String: String]
    /// Every value of each query parameter named more than once, in order
    /// (a query's conditions on one field: `quantity=gte.2&quantity=lte.5`).
    public var repeatedQuery: [String: [String]] = [:]
    /// Header fields as received, in order. A request has few: they are
    /// searched in place rather than hashed into a dictionary.
    public var headerFields: [(name: String, value: String)] { fields.map { ($0.name, $0.value) } }
    /// The same, as a struct: an array of them is released by code made for
    /// it, where an array of tuples goes through the runtime's generic
    /// destroy, field by field.
    let fields: [HeaderField]
    public let body: [UInt8]

    public init(method: String, path: String, query: [String: String] = [:],
                headerFields: [(name: String, value: String)], body: [UInt8] = [])
    {
        self.init(method: method, path: path, query: query, fields: headerFields.map { HeaderField(name: $0.name, value: $0.value) },
                  body: body)
    }

    init(method: String, path: String, query: [String: String], fields: [HeaderField], body: [UInt8]) {
        self.method = method
        self.path = path
        self.query = query
        self.fields = fields
        self.body = body
    }

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = []) {
        self.init(method: method, path: path, query: query, headerFields: headers.map { ($0.key, $0.value) }, body: body)
    }

    /// Every value of query parameter `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        repeatedQuery[name] ?? query[name].map { [$0] } ?? []
    }

    /// The value of header `name` (any case); of a repeated header, the last.
    public func header(_ name: String) -> String? {
        fields.last { sameHeaderName($0.name, name) }?.value
    }
}
