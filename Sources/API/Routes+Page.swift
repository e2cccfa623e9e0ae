import HTTPServer
import ModelStore

extension ObservableAPI {
    /// The live page (web/, built in: see `PageFile`): `GET /` and
    /// `GET /assets/{name}`. Open to anyone, even when tokens are configured:
    /// the page holds no model data, and its API calls carry the token.
    func addPageRoutes(to router: Router) {
        router.get("/", access: .open) { context in
            .response(Self.page(PageFile.index, request: context.request))
        }
        router.get("/assets/:name", access: .open) { context in
            let name = context.parameter("name")
            guard let file = PageFile.assets[name] else { throw APIError(404, "No resource at /assets/\(name)") }
            return .response(Self.page(file, request: context.request))
        }
    }

    /// A page file with its content type and ETag; `304` when
    /// `If-None-Match` names it. `no-cache`: a browser keeps the file but
    /// asks again each time, so a new build is seen at once.
    static func page(_ file: PageFile, request: HTTPRequest) -> HTTPResponse {
        var response = HTTPResponse(status: 200, body: file.bytes)
        if let match = request.header("If-None-Match"), EntityTag.list(match, contains: file.etag, weak: true) {
            response.status = 304
            response.body = []
        } else {
            response.setHeader("Content-Type", file.contentType)
        }
        response.setHeader("ETag", file.etag)
        response.setHeader("Cache-Control", "no-cache")
        response.setHeader("X-Content-Type-Options", "nosniff")
        // The page loads and calls only this server.
        response.setHeader("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        return response
    }
}
