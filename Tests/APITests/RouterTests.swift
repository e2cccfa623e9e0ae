@testable import API
@testable import HTTPServer
import Testing

/// A router asked directly, without a socket.
struct RouterProbe {
    let responder: RouterResponder
    let metrics: Metrics

    init(_ build: (Router) -> Void) {
        let router = Router()
        build(router)
        metrics = Metrics()
        responder = router.buildResponder(metrics: metrics)
    }

    /// The daemon a `Connection` names; never started.
    static let daemon = HTTPDaemon(configuration: HTTPDaemon.Configuration(), responder: Unreachable())

    struct Unreachable: HTTPResponder {
        func respond(to request: HTTPRequest, connection: Connection) -> Reply { .response(HTTPResponse(status: 500)) }
    }

    /// The answer to `method path`. The router hands the connection only to
    /// the handlers, which use it to park; the handlers here never do, so
    /// it names no real connection.
    func respond(_ method: String, _ path: String) -> HTTPResponse {
        let connection = Connection(daemon: Self.daemon, pointer: ConnectionPointer(raw: OpaquePointer(bitPattern: 0x1)!),
                                    context: RequestContext(method: method, url: path))
        guard case .response(let response) = responder.respond(to: HTTPRequest(method: method, path: path), connection: connection) else {
            Issue.record("\(method) \(path) was parked")
            return HTTPResponse(status: 0)
        }
        return response
    }

    /// The text of the answer to `GET path`, or its status when not 200.
    func text(_ path: String, _ method: String = "GET") -> String {
        let response = respond(method, path)
        return response.status == 200 ? String(decoding: response.body, as: UTF8.self) : String(response.status)
    }
}

/// A handler that answers `text`.
func answer(_ text: String) -> RouteHandler {
    { _ in .response(HTTPResponse(status: 200, body: Array(text.utf8))) }
}

@Suite struct RouterTests {
    static let posts = RouterProbe { router in
        router.get("/posts/staggered", answer("staggered"))
        router.get("/posts/:id") { context in .response(HTTPResponse(status: 200, body: Array("post \(context.parameter("id"))".utf8))) }
        router.delete("/posts/:id", answer("deleted"))
        router.post("/posts", answer("created"))
    }

    @Test func aLiteralRouteAddedBeforeAParameterisedOneKeepsItsPath() {
        #expect(Self.posts.text("/posts/staggered") == "staggered")
        #expect(Self.posts.text("/posts/staggered/") == "staggered")
        #expect(Self.posts.text("/posts/42") == "post 42")
        #expect(Self.posts.text("/posts/staggered2") == "post staggered2")
    }

    /// Literal paths are looked up in a table, but never ahead of an
    /// earlier route that matches them too.
    @Test func routesAreTriedInTheOrderTheyWereAdded() {
        let probe = RouterProbe { router in
            router.get("/items/:id") { context in .response(HTTPResponse(status: 200, body: Array("item \(context.parameter("id"))".utf8))) }
            router.get("/items/new", answer("new"))
            router.get("/other", answer("other"))
        }
        #expect(probe.text("/items/new") == "item new")
        #expect(probe.text("/other") == "other")
    }

    @Test func aMethodTheRouteLacksIs405WithAllowNamingItsMethodsAndHEADWithGET() {
        let put = Self.posts.respond("PUT", "/posts/1")
        #expect(put.status == 405)
        #expect(put.header("Allow") == "DELETE, GET, HEAD")
        #expect(put.header("Content-Type") == "application/problem+json")
        // Without GET there is no HEAD either.
        let get = Self.posts.respond("GET", "/posts")
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")
    }

    @Test func headIsAnsweredByTheGETHandler() {
        #expect(Self.posts.text("/posts/7", "HEAD") == "post 7")
        #expect(Self.posts.respond("HEAD", "/posts").status == 405)
    }

    @Test func aPathNoRouteMatchesIs404() {
        for path in ["/nothing", "/posts//", "/Posts/1", "/posts/1/more", "/"] {
            let response = Self.posts.respond("GET", path)
            #expect(response.status == 404, "\(path)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
    }

    @Test func anErrorAHandlerThrowsBecomesProblemJSONInOnePlace() {
        struct Unexpected: Error {}
        let probe = RouterProbe { router in
            router.get("/refused") { _ in throw APIError(422, "not like that") }
            router.get("/broken") { _ in throw Unexpected() }
        }
        let refused = probe.respond("GET", "/refused")
        #expect(refused.status == 422)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(String(decoding: refused.body, as: UTF8.self).contains(#""detail":"not like that""#))
        // An error that is no problem of the client's says nothing of itself.
        let broken = probe.respond("GET", "/broken")
        #expect(broken.status == 500)
        #expect(!String(decoding: broken.body, as: UTF8.self).contains("Unexpected"))
    }

    @Test func answersAreCountedByRoutePatternAndStatus() {
        let probe = RouterProbe { router in
            router.get("/posts/:id", answer("post"))
        }
        _ = probe.respond("GET", "/posts/1")
        _ = probe.respond("GET", "/posts/2")
        _ = probe.respond("DELETE", "/posts/2")
        _ = probe.respond("GET", "/elsewhere")
        let text = probe.metrics.render(gauges: [])
        #expect(text.contains(#"observable_http_requests_total{route="/posts/:id",status="200"} 2"#))
        #expect(text.contains(#"observable_http_requests_total{route="/posts/:id",status="405"} 1"#))
        #expect(text.contains(#"observable_http_requests_total{route="unmatched",status="404"} 1"#))
    }
}
