import HTTPServer
import JSON

/// RFC 9457 problem details, the body of every error answer.
enum Problem {
    /// An `application/problem+json` response.
    static func response(_ status: Int, _ title: String, _ detail: String, headers: [(name: String, value: String)] = [],
                         extensions: [(name: String, value: Int64)] = []) -> HTTPResponse
    {
        var response = HTTPResponse(status: status, headers: headers, body: json(status, title, detail, extensions: extensions))
        response.setHeader("Content-Type", "application/problem+json")
        return response
    }

    /// The problem as JSON text, with `extensions` (RFC 9457 extension members) after `detail`.
    static func json(_ status: Int, _ title: String, _ detail: String, extensions: [(name: String, value: Int64)] = []) -> [UInt8] {
        var body: [UInt8] = []
        var object = JSONObjectWriting(into: &body)
        object.member("type", "about:blank", into: &body)
        object.member("title", title, into: &body)
        object.member("status", Int64(status), into: &body)
        object.member("detail", detail, into: &body)
        for (name, value) in extensions { object.member(name, value, into: &body) }
        object.end(into: &body)
        return body
    }

    /// `410` for a `since` older than the oldest change kept (`prunedThrough`
    /// is the newest change no longer kept): names the oldest retained seq
    /// and the way back.
    static func gone(prunedThrough: Int64) -> (detail: String, extensions: [(name: String, value: Int64)]) {
        ("changes up to \(prunedThrough) are no longer kept (the oldest kept is \(prunedThrough + 1)): poll with repair=true to get the current value of everything the observer reads at the current cursor, or read the resources again and poll from their Observation-Cursor",
         [("oldestRetainedSeq", prunedThrough + 1)])
    }
}
