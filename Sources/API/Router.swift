import HTTPServer

/// What a route handler sees: the request, the path parameters, and the
/// connection (to park a long-poll).
public struct RouteContext: Sendable {
    public let request: HTTPRequest
    public let parameters: [String: String]
    public let connection: Connection
    /// The route's pattern, e.g. `/truck/donuts/:id`.
    public let route: String
    /// CORS headers for this request's origin; an answer sent later (a
    /// parked long-poll) carries them too.
    public let corsHeaders: [(name: String, value: String)]
    /// Where the route's answers are counted.
    let counter: Metrics.RouteCounter

    public func parameter(_ name: String) -> String {
        parameters[name] ?? ""
    }

    /// Finishes an answer given later, when a read or a write waited with
    /// its connection suspended, as `finish` does one given now.
    func finish(_ outcome: Result<HTTPResponse, any Error>) -> HTTPResponse {
        Self.finish(outcome, cors: corsHeaders, counter: counter)
    }

    /// Where every answer of the API is finished, given now or later: a
    /// failure becomes its problem+json (`Problem.response(for:)`), the
    /// request origin's CORS headers are added, and the answer is counted
    /// under its route (`counter` nil: counted by the caller, as the
    /// change feed counts the polls it wakes together).
    static func finish(_ outcome: Result<HTTPResponse, any Error>, cors: [(name: String, value: String)],
                       counter: Metrics.RouteCounter?) -> HTTPResponse
    {
        var response: HTTPResponse
        switch outcome {
        case .success(let answer): response = answer
        case .failure(let error): response = Problem.response(for: error)
        }
        for header in cors { response.setHeader(header.name, header.value) }
        counter?.record(response.status)
        return response
    }
}

public typealias RouteHandler = @Sendable (RouteContext) throws -> Reply

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
        }, metrics: metrics, policy: policy)
    }
}

/// Dispatches a request to its route's handler and turns thrown errors into
/// problem+json answers, in one place.
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
    let metrics: Metrics
    let policy: AccessPolicy
    /// Routes without parameters by their path, for the paths that no
    /// earlier route also matches: found without splitting the path.
    let literalRoutes: [String: Int]
    /// Where requests that match no route are counted.
    let unmatched: Metrics.RouteCounter
    /// Every method some route allows, for `OPTIONS *`.
    let allMethods: String

    init(routes: [Route], metrics: Metrics, policy: AccessPolicy) {
        self.routes = routes
        self.metrics = metrics
        self.policy = policy
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

    /// problem+json, as every error of the API.
    public func refusal(status: Int, detail: String) -> HTTPResponse {
        Problem.response(for: APIError(status, detail))
    }

    /// What routing decided: an answer now (or the failure it is), counted
    /// under `counter`, or a connection left waiting.
    private enum Routed {
        case answer(Result<HTTPResponse, any Error>, Metrics.RouteCounter)
        case parked
    }

    public func respond(to request: HTTPRequest, connection: Connection) -> Reply {
        let cors = policy.corsHeaders(for: request)
        switch route(request, connection: connection, cors: cors) {
        case .answer(let outcome, let counter):
            return .response(RouteContext.finish(outcome, cors: cors, counter: counter))
        case .parked:
            return .parked
        }
    }

    private func route(_ request: HTTPRequest, connection: Connection, cors: [(name: String, value: String)]) -> Routed {
        let path = request.path
        let trailingSlash = path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/")
        if let index = literalRoutes[trailingSlash ? String(path.dropLast()) : path] {
            return dispatch(request, to: routes[index], parameters: [:], connection: connection, cors: cors)
        }
        if path.utf8.first == UInt8(ascii: "*") {
            // `OPTIONS *` (the only request the daemon lets through without a path): the server's methods.
            return .answer(.success(HTTPResponse(status: 204, headers: [("Allow", allMethods)])), unmatched)
        }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let segments = parts.last == "" ? Array(parts.dropLast()) : Array(parts)
        for route in routes {
            guard let parameters = Self.match(route.segments, segments) else { continue }
            return dispatch(request, to: route, parameters: parameters, connection: connection, cors: cors)
        }
        return .answer(.failure(APIError(404, "No resource at \(request.path)")), unmatched)
    }

    private func dispatch(_ request: HTTPRequest, to route: Route, parameters: [String: String], connection: Connection,
                          cors: [(name: String, value: String)]) -> Routed
    {
        let method = request.method == "HEAD" ? "GET" : request.method
        if method == "OPTIONS", !cors.isEmpty {
            // A CORS preflight from an allowed origin.
            let response = HTTPResponse(status: 204, headers: AccessPolicy.preflightHeaders(methods: route.methods))
            return .answer(.success(response), route.counter)
        }
        guard let (_, access, handler) = route.handlers.first(where: { $0.method == method }) else {
            return .answer(.failure(APIError(405, "\(request.method) is not allowed on \(request.path)",
                                             headers: [("Allow", route.methods.joined(separator: ", "))])), route.counter)
        }
        if let denied = policy.deny(request, access: access) {
            return .answer(.failure(denied), route.counter)
        }
        let context = RouteContext(request: request, parameters: parameters, connection: connection, route: route.pattern,
                                   corsHeaders: cors, counter: route.counter)
        do {
            switch try handler(context) {
            case .response(let response): return .answer(.success(response), route.counter)
            case .parked: return .parked
            }
        } catch {
            return .answer(.failure(error), route.counter)
        }
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
