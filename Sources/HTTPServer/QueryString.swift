internal import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif

/// A request's query parameters, read as libmicrohttpd reads them: split at
/// `&` and at the first `=`, `+` as a space, then percent-decoded by the
/// daemon's own unescaper (which leaves `%00` encoded). A name without `=`
/// has the value "", and a repeated name keeps its last value. (Read here
/// rather than by libmicrohttpd: see `HTTPDaemon.takeQuery`.)
enum QueryString {
    /// The parameters of `query` (the text after `?`), or nil when there
    /// are more than `limit`.
    static func parameters(_ query: UnsafePointer<CChar>, limit: Int) -> [String: String]? {
        let length = strlen(query)
        guard length > 0 else { return [:] }
        var count = 1
        for i in 0..<length where query[i] == ampersand { count += 1 }
        // A trailing `&` ends the query without starting a parameter.
        if query[length - 1] == ampersand { count -= 1 }
        guard count <= limit else { return nil }
        // Decoded in a copy: the target stays as libmicrohttpd left it.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer in
            let text = buffer.baseAddress!
            text.initialize(from: query, count: length + 1)
            var parameters: [String: String] = [:]
            parameters.reserveCapacity(count)
            var start = 0
            while start < length {
                var end = start
                while end < length, text[end] != ampersand { end += 1 }
                var equals = start
                while equals < end, text[equals] != equalsSign { equals += 1 }
                let name = decode(text, from: start, to: equals)
                parameters[name] = equals < end ? decode(text, from: equals + 1, to: end) : ""
                start = end + 1
            }
            return parameters
        }
    }

    /// Decodes `text[from..<to]` in place (ending it with a NUL).
    private static func decode(_ text: UnsafeMutablePointer<CChar>, from: Int, to: Int) -> String {
        for i in from..<to where text[i] == plus { text[i] = space }
        text[to] = 0
        let length = osv_unescape(nil, nil, text + from)
        return UnsafeRawPointer(text + from).withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    private static let ampersand = CChar(UInt8(ascii: "&"))
    private static let equalsSign = CChar(UInt8(ascii: "="))
    private static let plus = CChar(UInt8(ascii: "+"))
    private static let space = CChar(UInt8(ascii: " "))
}
