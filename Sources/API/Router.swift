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

/// A route's handler; it may add to the context what its answers carry
/// (`RouteContext.carry`).
public typealias RouteHandler = @Sendable (inout RouteContext) throws -> Reply

/// Who may call a route when tokens are configured (see `AccessPolicy`).
public enum RouteAccess: Sendable {
    /// Anyone (health probes).
    case open
    /// Readers: every `GET`, and creating, deleting and clearing one's observer.
    case read
    /// Writers: everything that changes a model.
    case write
}

/// Collects routes (`get`, `post`, …) and builds the immutable responder.
public final class Router {
    struct Route {
        let pattern: String
        let segments: [Segment]
        var handlers: [String: (access: RouteAccess, handler: RouteHandler)]
    }

    enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    public init() {}

    /// Adds a route. `access` defaults to `.read` for `GET` and `.write` otherwise.
    public func on(_ method: String, _ pattern: String, access: RouteAccess? = nil, _ handler: @escaping RouteHandler) {
        let entry = (access: access ?? (method == "GET" ? .read : .write), handler: handler)
        if let index = routes.firstIndex(where: { $0.pattern == pattern }) {
            routes[index].handlers[method] = entry
            return
        }
        let segments: [Segment] = pattern.split(separator: "/").map { part in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(String(part))
        }
        routes.append(Route(pattern: pattern, segments: segments, handlers: [method: entry]))
    }

    public func get(_ pattern: String, access: RouteAccess? = nil, _ handler: @escaping RouteHandler) { on("GET", pattern, access: access, handler) }
    public func post(_ pattern: String, access: RouteAccess? = nil, _ handler: @escaping RouteHandler) { on("POST", pattern, access: access, handler) }
    public func patch(_ pattern: String, access: RouteAccess? = nil, _ handler: @escaping RouteHandler) { on("PATCH", pattern, access: access, handler) }
    public func delete(_ pattern: String, access: RouteAccess? = nil, _ handler: @escaping RouteHandler) { on("DELETE", pattern, access: access, handler) }

    public func buildResponder(metrics: Metrics, policy: AccessPolicy = AccessPolicy()) -> RouterResponder {
        RouterResponder(routes: routes.map {
            RouterResponder.Route(pattern: $0.pattern, segments: $0.segments,
                                  handlers: $0.handlers.map { (method: $0.key, access: $0.value.access, handler: $0.value.handler) },
                                  counter: metrics.counter(for: $0.pattern))
        }, metrics: metrics, pipeline: AnswerPipeline(policy: policy, metrics: metrics))
    }
}

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

    private func route(_ request: HTTPRequest, context: inout RouteContext) -> Endpoint {
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
