/// A response to send: status, headers and body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public mutating func setHeader(_ name: String, _ value: String) {
        if headers.contains(where: { sameHeaderName($0.name, name) }) {
            headers.removeAll { sameHeaderName($0.name, name) }
        }
        headers.append((name, value))
    }

    public func header(_ name: String) -> String? {
        headers.last { sameHeaderName($0.name, name) }?.value
    }
}

/// Whether two header names are equal ignoring ASCII case (header names are
/// ASCII tokens), without making lower-cased copies.
func sameHeaderName(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { x, y in
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
    }
}
