import HTTPServer
import Logging
import ModelStore

/// An error with what its problem+json answer says: its status, title and
/// detail (RFC 9457), members beyond those, and headers. Every error a
/// handler throws, or an answer given later fails with, becomes an answer
/// through it, in `Problem.response(for:)`; an error that is not one is a
/// `500` and is logged.
protocol ProblemError: Error {
    var status: Int { get }
    /// The status's own title unless given.
    var title: String { get }
    var detail: String { get }
    /// Extension members, after `detail` (`oldestRetainedSeq`).
    var extensions: [(name: String, value: Int64)] { get }
    var headers: [(name: String, value: String)] { get }
}

extension ProblemError {
    var title: String { Problem.title(for: status) }
    var extensions: [(name: String, value: Int64)] { [] }
    var headers: [(name: String, value: String)] { [] }
}

/// Errors the API raises itself.
public struct APIError: ProblemError {
    public let status: Int
    public let detail: String
    public var extensions: [(name: String, value: Int64)] = []
    public var headers: [(name: String, value: String)] = []

    public init(_ status: Int, _ detail: String, extensions: [(name: String, value: Int64)] = [],
                headers: [(name: String, value: String)] = [])
    {
        self.status = status
        self.detail = detail
        self.extensions = extensions
        self.headers = headers
    }
}

extension Problem {
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
