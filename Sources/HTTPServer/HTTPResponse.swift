internal import CMicroHTTPD

/// A response to send: status, headers and body.
public struct HTTPResponse: Sendable {
    public var status: Int { didSet { prepared = nil } }
    public var headers: [(name: String, value: String)] { didSet { prepared = nil } }
    public var body: [UInt8] { didSet { prepared = nil } }
    /// A body made while it is sent, in the place of `body` (a large answer).
    public var bodyStream: BodyStream? { didSet { prepared = nil } }
    /// libmicrohttpd's own copy of it, made once by `share()` for an answer
    /// that goes to many connections; any change lets it go.
    private(set) var prepared: PreparedResponse?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Makes libmicrohttpd's copy of this response now (once): every
    /// connection it is sent to then queues that one copy (libmicrohttpd
    /// counts its references) instead of copying the body and headers again.
    public mutating func share() {
        if prepared == nil, bodyStream == nil { prepared = PreparedResponse(self) }
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
    guard a.utf8.count == b.utf8.count else { return false }
    // Mostly written as the server writes it: a short name is compared whole.
    if a == b { return true }
    return zip(a.utf8, b.utf8).allSatisfy { x, y in
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
    }
}

/// A response as libmicrohttpd holds it, released with the last
/// `HTTPResponse` that refers to it; libmicrohttpd keeps it alive for the
/// connections it is queued on.
final class PreparedResponse: @unchecked Sendable {
    let raw: OpaquePointer

    init?(_ response: HTTPResponse) {
        let made = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let made else { return nil }
        Self.add(response.headers, to: made)
        raw = made
    }

    static func add(_ headers: [(name: String, value: String)], to response: OpaquePointer) {
        for header in headers {
            // A native string's UTF-8 is already NUL-terminated: no copy.
            _ = header.name.withCString { name in
                header.value.withCString { value in MHD_add_response_header(response, name, value) }
            }
        }
    }

    deinit {
        MHD_destroy_response(raw)
    }
}
