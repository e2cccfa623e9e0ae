import HTTPServer
import Logging
import ModelStore

/// An error with what its problem+json answer says. Every error a handler
/// throws becomes an answer through it, in `APIError.response(for:)`; an
/// error that is not one is a `500` and is logged.
protocol ProblemError: Error {
    var status: Int { get }
    var detail: String { get }
    var headers: [(name: String, value: String)] { get }
}

/// Errors the API raises itself.
public struct APIError: ProblemError {
    public let status: Int
    public let detail: String
    public var headers: [(name: String, value: String)] = []

    public init(_ status: Int, _ detail: String, headers: [(name: String, value: String)] = []) {
        self.status = status
        self.detail = detail
        self.headers = headers
    }

    static let logger = Logger(label: "observable.api")

    static func title(for status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 507: return "Insufficient Storage"
        default: return status >= 500 ? "Internal Server Error" : "Error"
        }
    }

    /// The problem+json answer for any error a handler throws.
    static func response(for error: any Error) -> HTTPResponse {
        guard let problem = error as? any ProblemError else {
            logger.error("request failed: \(error)")
            return Problem.response(500, title(for: 500), "The server could not complete the request.")
        }
        if let error = error as? ModelError, error.kind == .busy { logger.error("database busy") }
        return Problem.response(problem.status, title(for: problem.status), problem.detail, headers: problem.headers)
    }
}

/// A model's refusal, in HTTP terms.
extension ModelError: ProblemError {
    var status: Int {
        switch kind {
        case .badRequest: return 400
        case .notFound: return 404
        case .unprocessable: return 422
        case .preconditionFailed: return 412
        case .unavailable, .busy: return 503
        case .tooManyRequests: return 429
        case .insufficientStorage: return 507
        }
    }

    var headers: [(name: String, value: String)] {
        switch kind {
        case .busy: return [("Retry-After", "1")]
        case .tooManyRequests(let seconds): return [("Retry-After", String(seconds))]
        default: return []
        }
    }
}
