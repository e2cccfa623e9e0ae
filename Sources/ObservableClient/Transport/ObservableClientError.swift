import Foundation
import JSON

/// Why a request through `ObservableClient` failed.
///
/// Writes fail with the typed cases the server's answer calls for; a network
/// failure of a write is `.unreachable` (the write may or may not have been
/// applied: its change, if any, arrives through the feed).
public enum ObservableClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `409` or `412`: the object changed on the server since this client
    /// last saw it (another client wrote first). Its change is on its way
    /// through the feed; try again once it has arrived.
    case conflict(Problem)
    /// `422`: the request breaks a rule of the model (an order for an
    /// unknown donut, a blank name, progress that goes back).
    case rejected(Problem)
    /// `401`: the server wants a write token (`ObservableClient(baseURL:token:)`).
    case unauthorized(Problem)
    /// `404`: the resource does not exist (any more).
    case notFound(Problem)
    /// `400`: the server could not read the request.
    case badRequest(Problem)
    /// Another status: `429` and `503` (try later), `507`, `500`.
    case server(Problem)
    /// The server could not be reached, or its answer was not understood.
    case unreachable(String)
    /// `close()` was called.
    case closed
    /// The client's base URL is not an `http` or `https` URL with a host:
    /// every load and write throws this at once, nothing is sent.
    case invalidBaseURL(String)

    /// The server's problem, when it sent one.
    public var problem: Problem? {
        switch self {
        case .conflict(let p), .rejected(let p), .unauthorized(let p), .notFound(let p), .badRequest(let p), .server(let p): p
        case .unreachable, .closed, .invalidBaseURL: nil
        }
    }

    public var description: String {
        switch self {
        case .conflict(let p): "conflict: \(p)"
        case .rejected(let p): "rejected: \(p)"
        case .unauthorized(let p): "unauthorized: \(p)"
        case .notFound(let p): "not found: \(p)"
        case .badRequest(let p): "bad request: \(p)"
        case .server(let p): "server: \(p)"
        case .unreachable(let reason): "unreachable: \(reason)"
        case .closed: "the client is closed"
        case .invalidBaseURL(let url): "not an http or https URL with a host: \(url)"
        }
    }

    /// The error a non-2xx answer stands for.
    static func from(status: Int, body: Data) -> ObservableClientError {
        let json = try? JSONParser.parse(Array(body))
        let problem = Problem(
            status: status,
            title: json?["title"]?.stringValue ?? "HTTP \(status)",
            detail: json?["detail"]?.stringValue ?? String(decoding: body.prefix(500), as: UTF8.self))
        switch status {
        case 409, 412: return .conflict(problem)
        case 422: return .rejected(problem)
        case 401, 403: return .unauthorized(problem)
        case 404, 410: return .notFound(problem)
        case 400: return .badRequest(problem)
        default: return .server(problem)
        }
    }
}
