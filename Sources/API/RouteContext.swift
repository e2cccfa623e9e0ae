import HTTPServer

/// What a route handler sees: the request, the path parameters, and the
/// connection (to park a long-poll); and, as the answer pipeline's stages
/// go through it, what they learn of the request.
public struct RouteContext: Sendable {
    public let request: HTTPRequest
    public internal(set) var parameters: [String: String] = [:]
    public let connection: Connection
    /// The route's pattern, e.g. `/truck/donuts/:id`.
    public internal(set) var route = ""
    /// Who may call the route (set by routing, checked by `AccessCheck`).
    var access = RouteAccess.open
    /// What finishes every answer to the request, given now or later.
    var answer: AnswerContext

    init(request: HTTPRequest, connection: Connection, answer: AnswerContext) {
        self.request = request
        self.connection = connection
        self.answer = answer
    }

    public func parameter(_ name: String) -> String {
        parameters[name] ?? ""
    }

    /// Finishes an answer given later, when a read or a write waited with
    /// its connection suspended, as the pipeline finishes one given now.
    func finish(_ outcome: Result<HTTPResponse, any Error>) -> HTTPResponse {
        answer.finish(outcome)
    }

    /// Adds a header to every answer to the request, given now or later.
    mutating func carry(_ name: String, _ value: String) {
        answer.headers.append((name, value))
    }
}
