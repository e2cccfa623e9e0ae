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
}
