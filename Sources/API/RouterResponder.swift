import HTTPServer
import ModelStore

/// Finds a request's route and has the answer pipeline take the request
/// to its handler; the daemon's own refusals are finished by the same
/// pipeline.
public struct RouterResponder: HTTPResponder {
    struct Route: Sendable {
        let pattern: String
        let segments: [Router.Segment]
        /// A route has a handful of methods: found by comparing, not hashing.
        let handlers: [(method: String, access: RouteAccess, handler: RouteHandler)]
        let counter: Metrics.RouteCounter

        var methods: [String] {
            var methods = handlers.map(\.method).sorted()
            if methods.contains("GET") { methods.append("HEAD") }
            return methods
        }
    }

    let routes: [Route]
    let pipeline: AnswerPipeline
    /// Routes without parameters by their path, for the paths that no
    /// earlier route also matches: found without splitting the path.
    let literalRoutes: [String: Int]
    /// Where requests that match no route are counted.
    let unmatched: Metrics.RouteCounter
    /// Every method some route allows, for `OPTIONS *`.
    let allMethods: String

    init(routes: [Route], metrics: Metrics, pipeline: AnswerPipeline) {
        self.routes = routes
        self.pipeline = pipeline
        unmatched = metrics.counter(for: "unmatched")
        var literalRoutes: [String: Int] = [:]
        for (index, route) in routes.enumerated() {
            let literals: [Substring] = route.segments.compactMap {
                if case .literal(let literal) = $0 { return Substring(literal) } else { return nil }
            }
            guard literals.count == route.segments.count,
                  !routes[..<index].contains(where: { Self.match($0.segments, literals) != nil })
            else { continue }
            literalRoutes["/" + literals.joined(separator: "/")] = index
        }
        self.literalRoutes = literalRoutes
        allMethods = Set(routes.flatMap(\.methods) + ["OPTIONS"]).sorted().joined(separator: ", ")
    }

    /// problem+json, as every error of the API, finished as every answer is.
    public func refusal(status: Int, detail: String, request: HTTPRequest?) -> HTTPResponse {
        pipeline.refusal(status: status, detail: detail, request: request)
    }

    /// Where routing leads: a route's handler, or an answer of its own.
    private enum Endpoint {
        case handler(RouteHandler)
        case answer(Result<HTTPResponse, any Error>)
    }

    public func respond(to request: HTTPRequest, connection: Connection) -> Reply {
        var context = RouteContext(request: request, connection: connection, answer: pipeline.context(for: request, counter: unmatched))
        let endpoint = route(request, context: &context)
        return pipeline.respond(request, context: &context) { context in
            switch endpoint {
            case .handler(let handler): return try handler(&context)
            case .answer(let outcome): return .response(try outcome.get())
            }
        }
    }

    /// The query parameters that take one value (each also under a
    /// collection's prefix: `orders.limit`). A repeated one is refused, rather
    /// than one of its values taken; a repeated condition is several conditions.
    static let singleValuedParameters: Set<Substring> = [
        "fields", "limit", "after", "order", "sort", "observer", "since", "timeout", "repair", "coalesce",
    ]

    /// `400` for a request that repeats a single-valued query parameter.
    static func repeatedParameter(_ request: HTTPRequest) -> ModelError? {
        for name in request.repeatedQuery.keys.sorted() {
            let last = name.split(separator: ".", omittingEmptySubsequences: false).last ?? Substring(name)
            if singleValuedParameters.contains(last) {
                return .badRequest("the query parameter \(name) appears more than once; it takes one value")
            }
        }
        return nil
    }

    private func route(_ request: HTTPRequest, context: inout RouteContext) -> Endpoint {
        if let refusal = Self.repeatedParameter(request) { return .answer(.failure(refusal)) }
        let path = request.path
        let trailingSlash = path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/")
        if let index = literalRoutes[trailingSlash ? String(path.dropLast()) : path] {
            return dispatch(request, to: routes[index], parameters: [:], context: &context)
        }
        if path.utf8.first == UInt8(ascii: "*") {
            // `OPTIONS *` (the only request the daemon lets through without a path): the server's methods.
            return .answer(.success(HTTPResponse(status: 204, headers: [("Allow", allMethods)])))
        }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let segments = parts.last == "" ? Array(parts.dropLast()) : Array(parts)
        for route in routes {
            guard let parameters = Self.match(route.segments, segments) else { continue }
            return dispatch(request, to: route, parameters: parameters, context: &context)
        }
        return .answer(.failure(APIError(404, "No resource at \(request.path)")))
    }

    /// The route's handler for the request's method, its access noted for
    /// `AccessCheck`; or, for a CORS preflight or a method the route does
    /// not allow, the answer (given to anyone).
    private func dispatch(_ request: HTTPRequest, to route: Route, parameters: [String: String], context: inout RouteContext) -> Endpoint {
        context.route = route.pattern
        context.parameters = parameters
        context.answer.counter = route.counter
        let method = request.method == "HEAD" ? "GET" : request.method
        // Before any handler adds to them, the headers its answers carry are
        // those of an allowed origin.
        if method == "OPTIONS", !context.answer.headers.isEmpty {
            // A CORS preflight from an allowed origin.
            return .answer(.success(HTTPResponse(status: 204, headers: AccessPolicy.preflightHeaders(methods: route.methods))))
        }
        guard let (_, access, handler) = route.handlers.first(where: { $0.method == method }) else {
            return .answer(.failure(APIError(405, "\(request.method) is not allowed on \(request.path)",
                                             headers: [("Allow", route.methods.joined(separator: ", "))])))
        }
        context.access = access
        return .handler(handler)
    }

    static func match(_ pattern: [Router.Segment], _ segments: [Substring]) -> [String: String]? {
        guard pattern.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(pattern, segments) {
            switch expected {
            case .literal(let literal):
                guard actual == literal else { return nil }
            case .parameter(let name):
                guard !actual.isEmpty else { return nil }
                parameters[name] = String(actual)
            }
        }
        return parameters
    }
}
