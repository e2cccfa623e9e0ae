/// What a responder does with a request: answer it now, or park it.
public enum Reply: Sendable {
    /// Send this response now.
    case response(HTTPResponse)
    /// The connection was parked with `Connection.park`; it is answered later.
    case parked
}
