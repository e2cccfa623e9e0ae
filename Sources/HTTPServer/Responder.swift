/// What a responder does with a request: answer it now, or park it.
public enum Reply: Sendable {
    /// Send this response now.
    case response(HTTPResponse)
    /// The connection was parked with `Connection.park`; it is answered later.
    case parked
}

/// Turns requests into replies; called on libmicrohttpd's threads.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest, connection: Connection) -> Reply
    /// The answer to a request the daemon refuses before any route sees it
    /// (a body over the limit, a query with too many parameters): the
    /// responder chooses its form.
    func refusal(status: Int, detail: String) -> HTTPResponse
}

extension HTTPResponder {
    /// Plain text, for a responder that chooses nothing else.
    public func refusal(status: Int, detail: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(detail.utf8))
    }
}
