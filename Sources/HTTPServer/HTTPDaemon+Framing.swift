internal import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif

/// Strict framing. A request whose head a proxy in front could read
/// differently from libmicrohttpd (request smuggling) is refused before its
/// body is read, and its connection closed: libmicrohttpd 0.9.75 (Debian's)
/// reads a body with both `Content-Length` and `Transfer-Encoding: chunked`
/// as chunked and keeps the connection, takes the first of two lengths,
/// keeps a name with a blank before its colon as a name of its own, joins a
/// folded line to the name of the field before it, accepts a missing or
/// repeated `Host`, and any target, blanks included, and waits for a body it
/// cannot frame (`Transfer-Encoding: gzip`) until the idle timeout. The
/// checks see only what its public API hands over: every header line it
/// kept, in order, repeats included (`osv_check_field`).
///
/// What that API cannot show is left as libmicrohttpd reads it: a folded
/// line joined to a name that stays a valid name (`X-A: one` + ` two` is
/// the field `X-Atwo: one`; a framing field so joined is refused), a value
/// cut at a NUL byte, a line ended by a bare LF.
///
/// What it refuses itself, before the server sees the request, is answered
/// by it with an HTML page (not problem+json): a malformed or too large
/// single `Content-Length` (`400`, `413`, with the answer's head sent
/// twice), a NUL in a field name or after the version (`400`), a line
/// without a colon (`400`), and a chunk line too long for the connection's
/// memory, such as a 20 KB chunk extension (`500`).
extension HTTPDaemon {
    /// Why a request with this head is refused (status and detail), or nil.
    static func framingRefusal(_ framing: osv_framing, isHTTP10: Bool) -> (status: Int, detail: String)? {
        if framing.bad_name != 0 {
            return (400, "A header field name contains whitespace or another character a name may not have.")
        }
        if framing.bad_line != 0 {
            return (400, "A header line is folded, contains a NUL byte or a CR, or does not end with CR LF.")
        }
        if framing.transfer_encodings > 0 {
            if framing.content_lengths > 0 { return (400, "A request may not have both Content-Length and Transfer-Encoding.") }
            if isHTTP10 { return (400, "An HTTP/1.0 request may not have a Transfer-Encoding.") }
            if framing.chunked == 0 { return (501, "The only transfer coding accepted is chunked, alone (and without a blank after it).") }
        }
        if framing.lengths_differ != 0 { return (400, "The request has Content-Length fields that disagree.") }
        if framing.hosts > 1 { return (400, "The request has more than one Host field.") }
        if framing.hosts == 0 && !isHTTP10 { return (400, "An HTTP/1.1 request needs a Host field.") }
        return nil
    }

    /// The header fields that take one value: a request that repeats one is
    /// refused, rather than one of its copies taken (`Authorization: Bearer r`
    /// then `Authorization: Bearer w` would be read as the second).
    static let singleValuedFields = [
        "authorization", "content-type", "if-match", "if-none-match", "last-event-id", "observer", "origin", "prefer",
    ]

    /// `400` for a request that repeats a single-valued header field.
    static func repeatedFieldRefusal(_ fields: [HeaderField]) -> (status: Int, detail: String)? {
        guard fields.count > 1 else { return nil }
        // One pass, names compared only where their lengths agree: this runs for every request.
        var seen: UInt16 = 0
        for field in fields {
            let length = field.name.utf8.count
            for (index, name) in singleValuedFields.enumerated() where name.utf8.count == length && sameHeaderName(field.name, name) {
                let bit: UInt16 = 1 << index
                if seen & bit != 0 { return (400, "The header field \(field.name) appears more than once; it takes one value.") }
                seen |= bit
            }
        }
        return nil
    }

    /// Whether the path of a request target, as sent (after the authority
    /// of an absolute-form target, before its query), holds an encoded
    /// slash, `%2F`.
    static func pathHasEncodedSlash(_ target: UnsafePointer<CChar>) -> Bool {
        var start = target
        if target[0] != 0x2F {
            guard let authority = strstr(target, "://"), let path = strchr(authority + 3, 0x2F) else { return false }
            start = UnsafePointer(path)
        }
        var byte = UnsafeRawPointer(start).assumingMemoryBound(to: UInt8.self)
        while byte.pointee != 0, byte.pointee != UInt8(ascii: "?") {
            if byte.pointee == UInt8(ascii: "%"), byte[1] == UInt8(ascii: "2"), byte[2] | 0x20 == UInt8(ascii: "f") { return true }
            byte += 1
        }
        return false
    }

    /// Whether a request target, as sent, holds a blank, a control
    /// character or DEL, none of which a target may hold (escaped, as `%20`,
    /// they are fine).
    static func hasBlankOrControl(_ target: UnsafePointer<CChar>) -> Bool {
        var byte = UnsafeRawPointer(target).assumingMemoryBound(to: UInt8.self)
        while byte.pointee != 0 {
            if byte.pointee <= 0x20 || byte.pointee == 0x7F { return true }
            byte += 1
        }
        return false
    }

    /// The path a request target names (its query already taken off): an
    /// origin-form target (`/truck`) as it is, an absolute-form one
    /// (`http://host/truck`, which servers must accept) without its scheme
    /// and authority, `*` as it is for `OPTIONS`; nil for any other target
    /// (`../truck`, `truck`, `host:80`), which is refused.
    static func path(ofTarget target: UnsafePointer<CChar>, method: String) -> String? {
        if target[0] == 0x2F { return String(cString: target) }
        if target[0] == 0x2A && target[1] == 0 { return method == "OPTIONS" ? "*" : nil }
        // `osv_unescape` leaves the authority as sent: its first `/` is the path's.
        let scheme: Int
        if strncasecmp(target, "http://", 7) == 0 {
            scheme = 7
        } else if strncasecmp(target, "https://", 8) == 0 {
            scheme = 8
        } else {
            return nil
        }
        let authority = target + scheme
        guard authority[0] != 0, authority[0] != 0x2F else { return nil }
        guard let path = strchr(authority, 0x2F) else { return "/" }
        return String(cString: path)
    }
}
