import HTTPServer
import Logging
import ModelStore
import SQLiteStore

/// Errors the API raises itself; model and store errors map here too, so
/// every error becomes problem+json in one place.
public struct APIError: Error {
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
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 503: return "Service Unavailable"
        default: return status >= 500 ? "Internal Server Error" : "Error"
        }
    }

    /// The problem+json answer for any error a handler throws.
    static func response(for error: any Error) -> HTTPResponse {
        switch error {
        case let error as APIError:
            return Problem.response(error.status, title(for: error.status), error.detail, headers: error.headers)
        case let error as ModelError:
            let status: Int
            switch error.kind {
            case .badRequest: status = 400
            case .notFound: status = 404
            case .unprocessable: status = 422
            case .preconditionFailed: status = 412
            case .unavailable: status = 503
            }
            return Problem.response(status, title(for: status), error.detail)
        case let error as SQLiteError where error.isBusy:
            logger.error("database busy: \(error)")
            return Problem.response(503, title(for: 503), "The database is busy; retry shortly.", headers: [("Retry-After", "1")])
        default:
            logger.error("request failed: \(error)")
            return Problem.response(500, title(for: 500), "The server could not complete the request.")
        }
    }
}
