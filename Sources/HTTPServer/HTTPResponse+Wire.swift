internal import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif

/// A response written to the socket by the server itself rather than by
/// libmicrohttpd: an event stream's head, and the refusals libmicrohttpd
/// cannot send (in the middle of a body, before a request, from another
/// thread).
extension HTTPResponse {
    /// The status line, `Date` and `headers`, each line ended, without the
    /// empty line that ends a head.
    static func headLines(status: Int, headers: [(name: String, value: String)]) -> String {
        let reason = osv_reason_phrase(UInt32(clamping: status)).map { String(cString: $0) } ?? "Status"
        var text = "HTTP/1.1 \(status) \(reason)\r\nDate: \(httpDate())\r\n"
        for header in headers { text += "\(header.name): \(header.value)\r\n" }
        return text
    }

    /// The whole response, ending the connection (`Connection: close`).
    var closingMessage: [UInt8] {
        let head = Self.headLines(status: status, headers: headers.filter { !sameHeaderName($0.name, "Connection") })
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Writes the response to `socket` as far as the socket takes it at once
    /// (a refusal is small: it fits unless the client has not read for a
    /// long time, and then it does not matter).
    func write(closingTo socket: Int32) {
        let bytes = closingMessage
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    /// Now as an HTTP date (`Mon, 23 Nov 2026 03:54:33 GMT`), in English
    /// whatever the locale.
    static func httpDate() -> String {
        var seconds = time(nil)
        var t = tm()
        gmtime_r(&seconds, &t)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(t.tm_wday) % 7]), \(two(t.tm_mday)) \(months[Int(t.tm_mon) % 12]) \(1900 + t.tm_year) "
            + "\(two(t.tm_hour)):\(two(t.tm_min)):\(two(t.tm_sec)) GMT"
    }
}
