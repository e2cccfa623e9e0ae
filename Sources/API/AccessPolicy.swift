import HTTPServer

/// Tokens and CORS: who may call what, and from which web origins.
///
/// With a write token, changing a model needs `Authorization: Bearer <write
/// token>`. With a read token as well, reading (including observers and the
/// change feed) needs either token. Health checks are always open.
public struct AccessPolicy: Sendable {
    public var writeToken: String?
    public var readToken: String?
    /// Origins allowed to call from a browser; `*` allows any. Empty: CORS off.
    public var corsOrigins: [String]

    public init(writeToken: String? = nil, readToken: String? = nil, corsOrigins: [String] = []) {
        self.writeToken = writeToken.flatMap { $0.isEmpty ? nil : $0 }
        self.readToken = readToken.flatMap { $0.isEmpty ? nil : $0 }
        self.corsOrigins = corsOrigins
    }

    /// A `401` answer when `request` may not call a route with `access`.
    func deny(_ request: HTTPRequest, access: RouteAccess) -> APIError? {
        let accepted: [String]
        switch access {
        case .open: return nil
        case .write:
            guard let writeToken else { return nil }
            accepted = [writeToken]
        case .read:
            guard let readToken else { return nil }
            accepted = [readToken] + (writeToken.map { [$0] } ?? [])
        }
        let presented = Self.bearer(request.header("Authorization"))
        // Check every accepted token, whatever matches, so the time taken
        // does not tell which one (or how much of it) was right.
        var granted = false
        for token in accepted where Self.constantTimeEquals(presented ?? "", token) { granted = true }
        if granted { return nil }
        let what = access == .write ? "Changing a model" : "Reading"
        return APIError(401, "\(what) needs Authorization: Bearer with a valid token.",
                        headers: [("WWW-Authenticate", #"Bearer realm="observable-server""#)])
    }

    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1].drop { $0 == " " })
    }

    /// Compares in time that depends only on the lengths, not on where the
    /// strings first differ.
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0 && x.count == y.count
    }

    /// CORS headers for the request's `Origin`, when it is allowed: `*`
    /// when any origin is, else the origin itself, named in the list (so
    /// never a value only the client chose).
    func corsHeaders(for request: HTTPRequest) -> [(name: String, value: String)] {
        guard !corsOrigins.isEmpty, let origin = request.header("Origin") else { return [] }
        let allowed: String
        if corsOrigins.contains("*") {
            allowed = "*"
        } else if let named = corsOrigins.first(where: { $0 == origin }) {
            allowed = named
        } else {
            return []
        }
        return [
            ("Access-Control-Allow-Origin", allowed),
            ("Vary", "Origin"),
            ("Access-Control-Expose-Headers", "ETag, Observation-Cursor, Location, Link"),
        ]
    }

    /// Whether `origin` may be named in `OBSERVABLE_CORS_ORIGINS`: `*`, or
    /// an origin as a browser sends it, `scheme://host[:port]`: a scheme of
    /// RFC 3986 (`https`, `http`, `capacitor`, …), a host of ASCII letters,
    /// digits, `-` and `.` (or an IPv6 literal in brackets), no path, no
    /// user, nothing else.
    public static func isValidCORSOrigin(_ origin: String) -> Bool {
        if origin == "*" { return true }
        guard let separator = origin.firstRange(of: "://") else { return false }
        let scheme = origin[..<separator.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter,
              scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return false }
        var host = origin[separator.upperBound...]
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            let port = host[host.index(after: colon)...]
            guard (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }), Int(port)! <= 65535 else { return false }
            host = host[..<colon]
        }
        guard (1...253).contains(host.count) else { return false }
        if host.hasPrefix("[") {
            return host.count > 2 && host.hasSuffix("]") && host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        return host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
    }

    static func preflightHeaders(methods: [String]) -> [(name: String, value: String)] {
        [
            ("Access-Control-Allow-Methods", methods.joined(separator: ", ")),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match, If-None-Match, Observer"),
            ("Access-Control-Max-Age", "600"),
        ]
    }
}
