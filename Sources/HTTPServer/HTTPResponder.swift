/// Turns requests into replies; called on libmicrohttpd's threads.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest, connection: Connection) -> Reply
    /// The answer to a request the daemon refuses itself, without asking
    /// `respond` (a body over the limit, a query with too many parameters,
    /// a head framed so that a proxy could read it otherwise, a connection
    /// over its address's share, a request too slow to arrive): the
    /// responder chooses its form and finishes it as its other answers
    /// (their headers, their count). It is asked once for each refusal the
    /// daemon sends. `request` is what the daemon read of the refused
    /// request: its method, target and header fields, no body; nil when no
    /// request's head was in.
    func refusal(status: Int, detail: String, request: HTTPRequest?) -> HTTPResponse
}

extension HTTPResponder {
    /// Plain text, for a responder that chooses nothing else.
    public func refusal(status: Int, detail: String, request: HTTPRequest?) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(detail.utf8))
    }
}
