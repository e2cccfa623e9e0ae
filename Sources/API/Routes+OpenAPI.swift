import EmbeddedFiles
import EmbeddedFiles
import HTTPServer

extension ObservableAPI {
    /// `GET /openapi.yaml`: the API's OpenAPI 3.1 document, docs/openapi.yaml
    /// as it was built in with the served models' parts merged in. Open to
    /// anyone, like `/healthz`, even when tokens are configured: it describes
    /// the API and holds no model data.
    func addOpenAPIRoutes(to router: Router) {
        let document = Array(APIReference.document(base: Embedded.openAPIDocument.text, catalog: store.catalog).utf8)
        router.get("/openapi.yaml", access: .open) { context in
            var response = Self.json(document, request: context.request)
            if response.status == 200 { response.setHeader("Content-Type", "application/yaml") }
            return .response(response)
        }
    }
}
