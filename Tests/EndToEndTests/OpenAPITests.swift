@testable import API
import Foundation
import Testing

@Suite struct OpenAPITests {
    static let documentPath = repositoryRoot.appendingPathComponent("docs/openapi.yaml").path

    static func document() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: documentPath)))
    }

    @Test func servedDocumentIsDocsOpenAPIYAMLByteForByte() throws {
        let server = try TestServer()
        let response = try server.client.get("/openapi.yaml")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/yaml")
        #expect(response.header("Cache-Control") == "no-cache")
        let document = try Self.document()
        #expect(response.body.count == document.count)
        #expect(response.body == document, "the served document differs from docs/openapi.yaml")

        let etag = try #require(response.header("ETag"))
        let again = try server.client.get("/openapi.yaml", headers: ["If-None-Match": etag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == etag)
    }

    @Test func documentIsOpenWhenTokensAreConfigured() throws {
        let server = try TestServer { $0.access = AccessPolicy(writeToken: "write-secret", readToken: "read-secret") }
        #expect(try server.client.get("/truck").status == 401)
        #expect(try server.client.get("/openapi.yaml").status == 200)
    }

    /// Every method of every route the router knows is an operation of the
    /// document, and the document has no operation the router lacks.
    @Test func documentHasExactlyTheRoutesOfTheRouter() throws {
        let server = try TestServer()
        var served: Set<String> = []
        for route in server.application.api.responder().routes {
            let path = route.pattern.split(separator: "/", omittingEmptySubsequences: false).map { segment in
                segment.hasPrefix(":") ? "{" + segment.dropFirst() + "}" : String(segment)
            }.joined(separator: "/")
            for handler in route.handlers { served.insert(handler.method + " " + path) }
        }
        let documented = Self.operations(in: String(decoding: try Self.document(), as: UTF8.self))
        #expect(!served.isEmpty)
        #expect(served.subtracting(documented).sorted() == [], "routes missing from docs/openapi.yaml")
        #expect(documented.subtracting(served).sorted() == [], "operations in docs/openapi.yaml that no route serves")
    }

    /// `METHOD /path` for each operation under `paths:`, read from the
    /// layout docs/openapi.yaml keeps: a path at two spaces of indentation,
    /// its methods at four.
    static func operations(in yaml: String) -> Set<String> {
        let methods: Set<String> = ["get", "put", "post", "patch", "delete", "head", "options", "trace"]
        var operations: Set<String> = []
        var inPaths = false
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" "), !line.isEmpty, !line.hasPrefix("#") {
                inPaths = line == "paths:"
                path = nil
                continue
            }
            guard inPaths, line.hasSuffix(":") else { continue }
            if line.hasPrefix("  /") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path {
                let key = String(line.dropFirst(4).dropLast())
                if methods.contains(key) { operations.insert(key.uppercased() + " " + path) }
            }
        }
        return operations
    }
}
