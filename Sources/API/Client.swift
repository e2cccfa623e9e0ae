import Digest
import HTTPServer
#if canImport(Glibc)
import Glibc
#endif

/// Who a request comes from, for the quotas kept per client: the bearer
/// token it presents when that is one the server accepts, else its
/// address. A token is named by a digest of it, made once (the name is
/// stored with the observers it creates; the token never is). An unknown
/// token does not make a new client: it counts as its address. An IPv6
/// address counts by its /64, the block one host is usually given.
struct Clients: Sendable {
    /// The name of each token the server accepts.
    private let tokens: [(token: String, client: String)]
    /// Addresses exempt from every per-client quota and rate.
    let trusted: TrustedAddresses

    init(policy: AccessPolicy, trusted: TrustedAddresses = .none) {
        tokens = [policy.writeToken, policy.readToken].compactMap { $0 }.map { token in
            (token, "token:" + SHA256.hex(Array(token.utf8)).prefix(32))
        }
        self.trusted = trusted
    }

    /// Whether `context`'s request comes from a trusted address.
    func isTrusted(_ context: RouteContext) -> Bool {
        guard !trusted.isEmpty, let address = context.connection.clientAddress else { return false }
        return trusted.contains(address: address)
    }

    /// The client `context`'s request comes from, for its quotas; nil when
    /// none are counted: its address is trusted, or unknown (a harness's
    /// connection) and it presents no token.
    func client(of context: RouteContext) -> String? {
        if isTrusted(context) { return nil }
        if !tokens.isEmpty, let presented = AccessPolicy.bearer(context.request.header("Authorization")) {
            // Each accepted token compared, whatever matches (as `AccessPolicy.deny`).
            var found: String?
            for (token, client) in tokens where AccessPolicy.constantTimeEquals(presented, token) { found = client }
            if let found { return found }
        }
        return context.connection.clientAddress.map(Self.client(address:))
    }

    /// The client at `address`: `address:127.0.0.1`, or `address:2001:db8:0:1::/64`.
    static func client(address: String) -> String {
        guard address.contains(":") else { return "address:" + address }
        // An IPv4 client of a socket that takes both.
        if address.hasPrefix("::ffff:"), address.contains(".") { return "address:" + address.dropFirst(7) }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return "address:" + address }
        let prefix = withUnsafeBytes(of: &bytes) { raw in
            (0..<4).map { String(UInt16(raw[2 * $0]) << 8 | UInt16(raw[2 * $0 + 1]), radix: 16) }.joined(separator: ":")
        }
        return "address:" + prefix + "::/64"
    }
}
