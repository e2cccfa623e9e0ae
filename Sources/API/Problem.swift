import HTTPServer
import JSON
import Logging
import ModelStore

/// RFC 9457 problem details, the body of every error answer.
enum Problem {
    /// The problem+json answer for any error: the one place such an
    /// answer is made.
    static func response(for error: any Error) -> HTTPResponse {
        guard let problem = error as? any ProblemError else {
            logger.error("request failed: \(error)")
            return response(500, title(for: 500), "The server could not complete the request.")
        }
        if let error = error as? ModelError, error.kind == .busy { logger.error("database busy") }
        return response(problem.status, problem.title, problem.detail, headers: problem.headers, extensions: problem.extensions)
    }

    /// An `application/problem+json` response (made only by `response(for:)`).
    fileprivate static func response(_ status: Int, _ title: String, _ detail: String, headers: [(name: String, value: String)] = [],
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
        object.member("detail", shortened(detail), into: &body)
        for (name, value) in extensions { object.member(name, value, into: &body) }
        object.end(into: &body)
        return body
    }

    /// The longest detail sent, in characters: a detail that quotes what a
    /// client sent quotes at most this much of it.
    static let maxDetail = 600

    /// `detail`, cut to `maxDetail` characters (`…` marks the cut).
    static func shortened(_ detail: String) -> String {
        guard detail.utf8.count > maxDetail, detail.count > maxDetail else { return detail }
        return String(detail.prefix(maxDetail - 1)) + "…"
    }

    /// `410` for a `since` older than the oldest change kept (`prunedThrough`
    /// is the newest change no longer kept): names the oldest retained seq
    /// and the way back.
    static func gone(prunedThrough: Int64) -> APIError {
        APIError(410, "changes up to \(prunedThrough) are no longer kept (the oldest kept is \(prunedThrough + 1)): poll with repair=true to get the current value of everything the observer reads at the current cursor, or read the resources again and poll from their Observation-Cursor",
                 extensions: [("oldestRetainedSeq", prunedThrough + 1)])
    }
}
