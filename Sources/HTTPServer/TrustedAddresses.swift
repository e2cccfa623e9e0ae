#if canImport(Glibc)
import Glibc
#endif

/// The client addresses exempt from every per-client quota and rate
/// (`OBSERVABLE_TRUSTED_ADDRESSES`): addresses and CIDR ranges, IPv4 or
/// IPv6, comma-separated. Connections are counted by IPv4 address and by
/// IPv6 /64, so an IPv6 entry with a longer prefix (`::1`, `fd00::1/128`)
/// trusts its /64.
public struct TrustedAddresses: Sendable, Equatable, CustomStringConvertible {
    /// A range of keys: those whose high and low words, masked, are these.
    struct Range: Sendable, Equatable {
        let high: UInt64, low: UInt64
        let highMask: UInt64, lowMask: UInt64

        func contains(_ key: ClientAddress) -> Bool {
            key.high & highMask == high && key.low & lowMask == low
        }
    }

    let ranges: [Range]
    /// The list as given.
    public let description: String

    public static let none = TrustedAddresses(ranges: [], description: "")

    init(ranges: [Range], description: String) {
        self.ranges = ranges
        self.description = description
    }

    /// Reads `127.0.0.1, 10.0.0.0/8, ::1, fd00::/8`; throws naming the first
    /// entry that is neither an address nor a range.
    public init(parsing list: String) throws(TrustedAddressError) {
        var ranges: [Range] = []
        for entry in list.split(separator: ",") {
            let text = entry.trimmingBlanks
            guard !text.isEmpty else { continue }
            guard let range = Self.range(text) else { throw TrustedAddressError(entry: String(text)) }
            ranges.append(range)
        }
        self.init(ranges: ranges, description: list)
    }

    public var isEmpty: Bool { ranges.isEmpty }

    func contains(_ key: ClientAddress) -> Bool {
        ranges.contains { $0.contains(key) }
    }

    /// Whether `address` (`127.0.0.1`, `::1`, as a connection names it) is trusted.
    public func contains(address: String) -> Bool {
        guard !ranges.isEmpty, let key = Self.key(address) else { return false }
        return contains(key)
    }

    /// The key connections from `address` are counted under (`osv_client_key_of`).
    static func key(_ address: String) -> ClientAddress? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return ClientAddress(high: 0, low: 0xffff_0000_0000 | UInt64(UInt32(bigEndian: v4.s_addr)))
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
            let v4 = bytes[12...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return ClientAddress(high: 0, low: 0xffff_0000_0000 | v4)
        }
        return ClientAddress(high: bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, low: 1)
    }

    private static func range(_ text: Substring) -> Range? {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let key = key(String(parts[0])) else { return nil }
        let isV4 = key.high == 0 && key.low >> 32 == 0xffff
        let width = isV4 ? 32 : 128
        var prefix = width
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...width).contains(given) else { return nil }
            prefix = given
        }
        if isV4 {
            let mask: UInt64 = prefix == 0 ? 0 : (UInt64(0xffff_ffff) << (32 - prefix)) & 0xffff_ffff
            return Range(high: 0, low: key.low & (0xffff_0000_0000 | mask), highMask: UInt64.max, lowMask: 0xffff_0000_0000 | mask)
        }
        // Kept by /64 at most.
        let bits = min(prefix, 64)
        let mask: UInt64 = bits == 0 ? 0 : UInt64.max << (64 - bits)
        return Range(high: key.high & mask, low: 1, highMask: mask, lowMask: UInt64.max)
    }
}

/// An entry of a trusted list that is neither an address nor a CIDR range.
public struct TrustedAddressError: Error, CustomStringConvertible {
    public let entry: String
    public var description: String { "\"\(entry)\" is neither an address nor a CIDR range (192.0.2.0/24, 2001:db8::/32)" }
}

extension Substring {
    fileprivate var trimmingBlanks: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
