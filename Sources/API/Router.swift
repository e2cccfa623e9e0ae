import HTTPServer

/// A route's handler; it may add to the context what its answers carry
/// (`RouteContext.carry`).
public typealias RouteHandler = @Sendable (inout RouteContext) throws -> Reply

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
        buildResponder(metrics: metrics, policy: policy, extraStages: [])
    }

    /// The responder, with `extraStages` after the API's own (after the access check).
    func buildResponder(metrics: Metrics, policy: AccessPolicy, extraStages: [any AnswerMiddleware]) -> RouterResponder {
        RouterResponder(routes: routes.map {
            RouterResponder.Route(pattern: $0.pattern, segments: $0.segments,
                                  handlers: $0.handlers.map { (method: $0.key, access: $0.value.access, handler: $0.value.handler) },
                                  counter: metrics.counter(for: $0.pattern))
        }, metrics: metrics, pipeline: AnswerPipeline(policy: policy, metrics: metrics, extraStages: extraStages))
    }
}
