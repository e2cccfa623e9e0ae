import ModelStore

/// Entity tags (RFC 9110): the strong tag of a body, and the lists of
/// `If-Match` and `If-None-Match`, matched one way.
enum EntityTag {
    /// The strong entity tag of `bytes`: `"` + 16 hex digits of their
    /// FNV-1a hash + `"`.
    static func of(_ bytes: [UInt8]) -> String {
        var digest = BodyDigest()
        digest.add(bytes)
        return of(digest: digest.value)
    }

    /// The tag of a body whose FNV-1a digest is `hash`.
    static func of(digest hash: UInt64) -> String {
        // Written in place.
        return String(unsafeUninitializedCapacity: 18) { buffer in
            let digits: StaticString = "0123456789abcdef"
            buffer[0] = UInt8(ascii: "\"")
            for i in 0..<16 {
                buffer[16 - i] = digits.utf8Start[Int((hash >> (UInt64(i) * 4)) & 0xf)]
            }
            buffer[17] = UInt8(ascii: "\"")
            return 18
        }
    }

    /// Whether the comma-separated `list` holds `*` or `etag`. A weak
    /// comparison (for `If-None-Match`) also takes `W/` + `etag`; a strong
    /// one (`If-Match`) never matches a weak tag.
    static func list(_ list: String, contains etag: String, weak: Bool) -> Bool {
        list.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingSpaces
            return tag == "*" || tag == etag || (weak && tag.hasPrefix("W/") && tag.dropFirst(2) == etag)
        }
    }

    /// What an `If-Match` header asks of the element a write changes: that
    /// its current representation has one of the tags listed (compared
    /// strongly). Nil without the header.
    static func ifMatch(_ header: String?) -> Precondition? {
        guard let header else { return nil }
        return Precondition { current throws(ModelError) in
            let etag = of(current.bytes)
            guard list(header, contains: etag, weak: false) else {
                throw ModelError(.preconditionFailed, "If-Match \(header) does not match the current version \(etag)")
            }
        }
    }
}
