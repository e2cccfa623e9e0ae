import HTTPServer

/// What a route handler sees: the request, the path parameters, and the
/// connection (to park a long-poll).
public struct RouteContext: Sendable {
    public let request: HTTPRequest
    public let parameters: [String: String]
    public let connection: Connection
    /// The route's pattern, e.g. `/truck/donuts/:id`.
    public let route: String

    public func parameter(_ name: String) -> String {
        parameters[name] ?? ""
    }
}

public typealias RouteHandler = @Sendable (RouteContext) throws -> Reply

/// Collects routes (`get`, `post`, …) and builds the immutable responder.
public final class Router {
    struct Route {
        let pattern: String
        let segments: [Segment]
        var handlers: [String: RouteHandler]
    }

    enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    public init() {}

    public func on(_ method: String, _ pattern: String, _ handler: @escaping RouteHandler) {
        if let index = routes.firstIndex(where: { $0.pattern == pattern }) {
            routes[index].handlers[method] = handler
            return
        }
        let segments: [Segment] = pattern.split(separator: "/").map { part in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(String(part))
        }
        routes.append(Route(pattern: pattern, segments: segments, handlers: [method: handler]))
    }

    public func get(_ pattern: String, _ handler: @escaping RouteHandler) { on("GET", pattern, handler) }
    public func post(_ pattern: String, _ handler: @escaping RouteHandler) { on("POST", pattern, handler) }
    public func patch(_ pattern: String, _ handler: @escaping RouteHandler) { on("PATCH", pattern, handler) }
    public func delete(_ pattern: String, _ handler: @escaping RouteHandler) { on("DELETE", pattern, handler) }

    public func buildResponder(metrics: Metrics) -> RouterResponder {
        RouterResponder(routes: routes.map { RouterResponder.Route(pattern: $0.pattern, segments: $0.segments, handlers: $0.handlers) },
                        metrics: metrics)
    }
}

/// Dispatches a request to its route's handler and turns thrown errors into
/// problem+json answers, in one place.
public struct RouterResponder: HTTPResponder {
    struct Route: Sendable {
        let pattern: String
        let segments: [Router.Segment]
        let handlers: [String: RouteHandler]
    }

    let routes: [Route]
    let metrics: Metrics

    public func respond(to request: HTTPRequest, connection: Connection) -> Reply {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let segments = parts.last == "" && parts.count > 1 ? Array(parts.dropLast()) : Array(parts)
        for route in routes {
            guard let parameters = Self.match(route.segments, segments) else { continue }
            let method = request.method == "HEAD" ? "GET" : request.method
            guard let handler = route.handlers[method] else {
                var allowed = route.handlers.keys.sorted()
                if allowed.contains("GET") { allowed.append("HEAD") }
                let response = Problem.response(405, "Method Not Allowed", "\(request.method) is not allowed on \(request.path)",
                                                headers: [("Allow", allowed.joined(separator: ", "))])
                return record(.response(response), route: route.pattern)
            }
            let context = RouteContext(request: request, parameters: parameters, connection: connection, route: route.pattern)
            do {
                return record(try handler(context), route: route.pattern)
            } catch {
                return record(.response(APIError.response(for: error)), route: route.pattern)
            }
        }
        return record(.response(Problem.response(404, "Not Found", "No resource at \(request.path)")), route: "unmatched")
    }

    private func record(_ reply: Reply, route: String) -> Reply {
        if case .response(let response) = reply { metrics.recordRequest(route: route, status: response.status) }
        return reply
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
