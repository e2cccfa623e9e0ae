/// A complete request: method, path, query, headers and body.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The path, percent-decoded, without the query.
    public let path: String
    /// Query parameters; a repeated name keeps its last value.
    public let query: [String: String]
    /// Header values by lower-cased name.
    public let headers: [String: String]
    public let body: [UInt8]

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The value of header `name` (any case).
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}
