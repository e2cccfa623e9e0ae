@testable import API
@testable import ModelStore
import Models
import Foundation
import Testing

@Suite struct OpenAPITests {
    static let documentPath = repositoryRoot.appendingPathComponent("docs/openapi.yaml").path

    static func document() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: documentPath)))
    }

    /// docs/openapi.yaml as the server composes it: each model's part
    /// derived again from its declaration, in the place of its copy in the file.
    static func composed(base: [UInt8]? = nil, models: Catalog = SeedModels.catalog()) throws -> [UInt8] {
        Array(APIReference.document(base: String(decoding: try base ?? document(), as: UTF8.self), catalog: models).utf8)
    }

    /// The file is the whole document, and the server answers exactly it:
    /// a declaration changed without the file (or the file without the
    /// declaration) fails here.
    @Test func servedDocumentIsDocsOpenAPIYAMLByteForByte() throws {
        let server = try TestServer()
        let response = try server.client.get("/openapi.yaml")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/yaml")
        #expect(response.header("Cache-Control") == "no-cache")
        let document = try Self.document()
        #expect(try Self.composed() == document,
                "the models' declarations and docs/openapi.yaml differ: with a server of this build, `curl -s localhost:8080/openapi.yaml > docs/openapi.yaml` and review the diff")
        #expect(response.body == document, "the served document is not docs/openapi.yaml (a build older than the file?)")

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

    /// A model's part comes from its declaration: a stale copy of it in the
    /// file is replaced, and a model the file lacks is added, while the
    /// hand-written operations of the same path stay.
    @Test func aModelsOperationsAndSchemasComeFromItsDeclaration() throws {
        let file = String(decoding: try Self.document(), as: UTF8.self)
        let quantity = "                quantity:\n                  type: integer\n                  minimum: 1\n                  maximum: 1000\n"
        #expect(file.contains(quantity))
        #expect(file.contains("                glaze:\n                  $ref: \"#/components/schemas/NullableText\"\n"))

        var stale = file.replacingOccurrences(of: quantity, with: quantity.replacingOccurrences(of: "1000", with: "5"))
        stale = stale.replacingOccurrences(of: "operationId: updateDonut", with: "operationId: renameDonut")
        stale = stale.replacingOccurrences(of: "    DonutSelection:\n", with: "    DonutSelection:\n      deprecated: true\n")
        #expect(stale != file)
        #expect(try Self.composed(base: Array(stale.utf8)) == Array(file.utf8))

        let withTodo = String(decoding: try Self.composed(models: SeedModels.catalog().adding(
            Catalog(resources: [TodoList.items, TodoList.list], migrations: []))), as: UTF8.self)
        #expect(withTodo.contains("\n  /todo/items:\n"))
        #expect(withTodo.contains("operationId: getTodoOpenCount"))
        #expect(withTodo.contains("    ItemSelection:\n"))
        #expect(Self.operations(in: withTodo).isSuperset(of: Self.operations(in: file)))
        #expect(Self.operations(in: withTodo).isSuperset(of: ["GET /jobs", "POST /jobs", "GET /todo/items", "POST /todo/items"]))
    }

    /// Each path of docs/openapi.yaml, asked with a method it does not
    /// have, answers `405` with an `Allow` that lists exactly the methods the
    /// file declares for it (and `HEAD` with `GET`), as OpenAPI tools check.
    @Test func everyPathOfTheFileAllowsExactlyTheMethodsItDeclares() throws {
        let server = try TestServer()
        var declared: [String: Set<String>] = [:]
        for operation in Self.operations(in: String(decoding: try Self.document(), as: UTF8.self)) {
            let parts = operation.split(separator: " ", maxSplits: 1)
            declared[String(parts[1]), default: []].insert(String(parts[0]))
        }
        #expect(declared.count > 30)
        for (path, methods) in declared.sorted(by: { $0.key < $1.key }) {
            let concrete = path.replacingOccurrences(of: #"\{[^}]+\}"#, with: "0", options: .regularExpression)
            let response = try server.client.request("OPTIONS", concrete)
            #expect(response.status == 405, "OPTIONS \(path)")
            let allowed = Set((response.header("Allow") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(allowed == methods.union(methods.contains("GET") ? ["HEAD"] : []), "Allow of \(path)")
        }
    }

    /// A request line or header fields past the connection memory are
    /// refused before any route is chosen (`OversizeRequestTests`), so every
    /// operation, the derived ones included, documents both refusals.
    @Test func everyOperationDocumentsTheRefusalsBeforeRouting() throws {
        let statuses = Self.statuses(in: String(decoding: try Self.document(), as: UTF8.self))
        #expect(statuses.count == Self.operations(in: String(decoding: try Self.document(), as: UTF8.self)).count)
        for (operation, documented) in statuses.sorted(by: { $0.key < $1.key }) {
            #expect(documented.isSuperset(of: ["414", "431"]), "\(operation) documents \(documented.sorted())")
        }
        let file = String(decoding: try Self.document(), as: UTF8.self)
        #expect(file.contains("\n    URITooLong:\n") && file.contains("\n    RequestHeaderFieldsTooLarge:\n"))
    }

    /// The change feed's `410` names the oldest change kept: every member of
    /// its problem is a property of the document's `Problem`, which admits
    /// no others.
    @Test func theGoneProblemIsAProblemOfTheDocument() throws {
        let server = try TestServer { $0.store.retainChanges = 3 }
        let client = server.client
        let id = try client.observer()
        for i in 0..<5 { _ = try client.patch("/truck", ["name": .string("Name \(i)")]) }
        let gone = try client.changes(id, since: 0)
        #expect(gone.status == 410)
        let members = Set(try #require(gone.json.objectValue).keys)
        #expect(members == ["type", "title", "status", "detail", "oldestRetainedSeq"])
        let file = String(decoding: try Self.document(), as: UTF8.self)
        #expect(file.contains("    Problem:\n      description: RFC 9457 problem details.\n      type: object\n      additionalProperties: false\n"))
        #expect(members.subtracting(Self.properties(ofSchema: "Problem", in: file)).sorted() == [],
                "members of the 410 that the document's Problem does not admit")
    }

    /// The shared text schemas state the limits the declarations hold text
    /// to: characters as `maxLength`, bytes as `x-maxBytes`, and "not blank"
    /// as the pattern the rule is tested against.
    @Test func theTextSchemasStateTheDeclaredLimits() throws {
        let file = String(decoding: try Self.document(), as: UTF8.self)
        let text = Self.keywords(ofSchema: "Text", in: file)
        #expect(text["maxLength"] == "\(TextLimits.standard.maxLength)")
        #expect(text["x-maxBytes"] == "\(TextLimits.standard.maxBytes)")
        #expect(text["pattern"] == "'\(Resource.visibleTextPattern)'")
        let imageURL = try #require(Posts.posts.field("imageURL")?.limits)
        let schema = Self.keywords(ofSchema: "ImageURL", in: file)
        #expect(schema["maxLength"] == "\(imageURL.maxLength)")
        #expect(schema["x-maxBytes"] == "\(imageURL.maxBytes)")
    }

    /// `If-Match` is described as the server reads it: every value its
    /// pattern admits is one the server may accept (a list of its own tags,
    /// or `*`), and the values it leaves out that a client may send (an
    /// empty value, a weak tag, a tag of another form) are refused whatever
    /// the state, so a tool that sends schema-valid values is refused only
    /// for a tag that is not current.
    @Test func theIfMatchPatternAdmitsWhatTheServerCanAccept() throws {
        let file = String(decoding: try Self.document(), as: UTF8.self)
        let quoted = try #require(Self.keywords(ofParameterSchema: "IfMatch", in: file)["pattern"])
        #expect(quoted.hasPrefix("'") && quoted.hasSuffix("'"))
        let pattern = try NSRegularExpression(pattern: String(quoted.dropFirst().dropLast()))
        func admits(_ value: String) -> Bool {
            pattern.firstMatch(in: value, range: NSRange(value.startIndex..., in: value)) != nil
        }

        let server = try TestServer()
        let client = server.client
        let donut = "/truck/donuts/0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
        func etag() throws -> String { try #require(try client.get(donut).header("ETag")) }
        let other = "\"0123456789abcdef\""
        var accepted: [String] = []
        for (i, value) in try ["current", "*", "list", "list with a tab"].enumerated() {
            let tag = try etag()
            let sent = switch value {
            case "current": tag
            case "*": "*"
            case "list": "\(other), \(tag)"
            default: "\(other),\t\(tag)"
            }
            #expect(admits(sent), "the If-Match pattern leaves out \(sent)")
            let answer = try client.patch(donut, ["topping": .string("topping \(i)")], headers: ["If-Match": sent])
            #expect(answer.status == 200, "If-Match: \(sent) was answered \(answer.status)")
            accepted.append(sent)
        }
        #expect(accepted.count == 4)

        let tag = try etag()
        for refused in ["", "W/" + tag, String(tag.dropFirst().dropLast()), "\"current\""] {
            #expect(!admits(refused), "the If-Match pattern admits \(refused)")
            let answer = try client.patch(donut, ["topping": .string("refused")], headers: ["If-Match": refused])
            #expect(answer.status == 412, "If-Match: \(refused) was answered \(answer.status)")
        }
        #expect(try etag() == tag)
    }

    /// The one-line keywords of the schema of the parameter `name` of
    /// `components: parameters:` (its `schema:` at six spaces, the keywords
    /// at eight), read from the layout docs/openapi.yaml keeps.
    static func keywords(ofParameterSchema name: String, in yaml: String) -> [String: String] {
        var inParameters = false, inParameter = false, inSchema = false
        var keywords: [String: String] = [:]
        for line in yaml.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            if indent <= 2 {
                inParameters = line == "  parameters:"
            } else if indent == 4 {
                inParameter = inParameters && line == "    \(name):"
                inSchema = false
            } else if inParameter, indent == 6 {
                inSchema = line == "      schema:"
            } else if inSchema, indent == 8, let colon = line.firstIndex(of: ":") {
                keywords[String(line[line.index(line.startIndex, offsetBy: 8)..<colon])] = String(line[colon...].dropFirst(2))
            }
        }
        return keywords
    }

    /// The one-line keywords (`key: value`) of the schema `name` of
    /// `components: schemas:`, read from the layout docs/openapi.yaml keeps.
    static func keywords(ofSchema name: String, in yaml: String) -> [String: String] {
        var inSchema = false
        var keywords: [String: String] = [:]
        for line in yaml.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            if indent <= 4 {
                inSchema = line == "    \(name):"
            } else if inSchema, indent == 6, let colon = line.firstIndex(of: ":") {
                keywords[String(line[line.index(line.startIndex, offsetBy: 6)..<colon])] = String(line[colon...].dropFirst(2))
            }
        }
        return keywords
    }

    /// The property names of the schema `name` of `components: schemas:`,
    /// read from the layout docs/openapi.yaml keeps (a schema at four spaces
    /// of indentation, its `properties:` at six, their names at eight).
    static func properties(ofSchema name: String, in yaml: String) -> Set<String> {
        var inSchema = false, inProperties = false
        var properties: Set<String> = []
        for line in yaml.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            if indent <= 4 {
                inSchema = line == "    \(name):"
                inProperties = false
            } else if inSchema, indent == 6 {
                inProperties = line == "      properties:"
            } else if inProperties, indent == 8, line.hasSuffix(":") {
                properties.insert(String(line.dropFirst(8).dropLast()))
            }
        }
        return properties
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
    /// The statuses each operation of `yaml` documents, by "METHOD /path".
    static func statuses(in yaml: String) -> [String: Set<String>] {
        let methods: Set<String> = ["get", "put", "post", "patch", "delete", "head", "options", "trace"]
        var statuses: [String: Set<String>] = [:]
        var inPaths = false, inResponses = false
        var path: String?, operation: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" "), !line.isEmpty, !line.hasPrefix("#") {
                inPaths = line == "paths:"
                path = nil
                operation = nil
                continue
            }
            guard inPaths else { continue }
            let indent = line.prefix { $0 == " " }.count
            if indent == 2, line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
                operation = nil
            } else if indent == 4, line.hasSuffix(":"), let path {
                let key = String(line.dropFirst(4).dropLast())
                operation = methods.contains(key) ? key.uppercased() + " " + path : nil
                if let operation { statuses[operation] = [] }
            } else if indent == 6 {
                inResponses = line == "      responses:"
            } else if indent == 8, inResponses, let operation, line.hasSuffix(":") {
                statuses[operation, default: []].insert(line.dropFirst(8).dropLast().trimmingCharacters(in: ["\""]))
            }
        }
        return statuses
    }

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
