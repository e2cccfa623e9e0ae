import JSON
import ModelStore

/// A model's part of the OpenAPI document, derived from its declaration:
/// the operations of the routes it allows, its schemas and its parameters.
/// They refer to the document's shared components (`Id`, `Text`,
/// `ObserverHeader`, `NotFound`, …), which the document itself declares.
extension Resource {
    /// Its operations, as entries of `paths:` (indented by two spaces).
    func openAPIPaths() -> String {
        var yaml = YAMLLines()
        switch kind {
        case .singleton:
            yaml.line(1, "\(path):")
            if operations.contains(.get) { readOperation(&yaml, id: "get\(schemaName)", summary: "Read the \(name)", schema: selectionName) }
            if operations.contains(.patch) { patchOperation(&yaml) }
            for computed in computed where operations.contains(.get) {
                yaml.line(1, "\(path)/\(computed.name):")
                computedOperation(&yaml, computed)
            }
        case .collection:
            if operations.contains(.list) || operations.contains(.create) {
                yaml.line(1, "\(path):")
                if operations.contains(.list) { listOperation(&yaml) }
                if operations.contains(.create) { createOperation(&yaml) }
            }
            let element = operations.subtracting([.list, .create])
            if !element.isEmpty {
                yaml.line(1, "\(path)/{id}:")
                yaml.line(2, "parameters:")
                yaml.line(3, "- $ref: \"#/components/parameters/\(schemaName)IdPath\"")
                if element.contains(.get) {
                    readOperation(&yaml, id: "get\(schemaName)", summary: "Read a\(article) \(elementName)", schema: selectionName)
                }
                if element.contains(.patch) { patchOperation(&yaml) }
                if element.contains(.delete) { deleteOperation(&yaml) }
            }
            for nested in nested where nested.operations.contains(.get) {
                yaml.line(1, "\(path)/{id}/\(nested.path)/{\(nested.elementName)Id}:")
                yaml.line(2, "parameters:")
                yaml.line(3, "- $ref: \"#/components/parameters/\(schemaName)IdPath\"")
                yaml.line(3, "- $ref: \"#/components/parameters/\(nested.schemaName)IdPath\"")
                nested.readOperation(&yaml, id: "get\(nested.schemaName)", summary: "Read a\(nested.article) \(nested.elementName)",
                                     schema: nested.selectionName)
            }
        }
        return yaml.text
    }

    /// Its `fields` parameter and, for a collection, its id parameter, as
    /// entries of `components: parameters:` (indented by four spaces).
    func openAPIParameters() -> String {
        var yaml = YAMLLines()
        yaml.line(2, "\(schemaName)Fields:")
        yaml.line(3, "name: fields")
        Self.fieldsParameter(&yaml, level: 3, names: selectableFields,
                             description: "Only these fields are answered and tracked\(kind == .collection ? "; `id` is always answered" : "")."
                                 + " An unknown name is `400`.")
        for collection in shownCollections {
            for (parameter, schema, rule) in Self.pageParameters {
                yaml.line(2, "\(schemaName)\(collection.name.capitalizedFirst)\(parameter.capitalizedFirst):")
                yaml.line(3, "name: \(collection.name).\(parameter)")
                yaml.line(3, "in: query")
                yaml.line(3, "description: \(YAMLLines.quoted("`\(parameter)` of the page of `\(collection.name)` shown: \(rule)"))")
                yaml.line(3, "schema:")
                yaml.line(4, "$ref: \"#/components/schemas/\(schema)\"")
            }
        }
        if kind == .collection {
            yaml.line(2, "\(schemaName)IdPath:")
            yaml.line(3, "name: \(isTopLevel ? "id" : elementName + "Id")")
            yaml.line(3, "in: path")
            yaml.line(3, "required: true")
            yaml.line(3, "description: A\(article) \(elementName)'s id.")
            yaml.line(3, "schema:")
            yaml.line(4, "$ref: \"#/components/schemas/Id\"")
        }
        for nested in nested { yaml.text += nested.openAPIParameters() }
        return yaml.text
    }

    /// Its representation, whole (`Donut`) and as `fields` selects it
    /// (`DonutSelection`), as entries of `components: schemas:`.
    func openAPISchemas() -> String {
        var yaml = YAMLLines()
        for nested in nested { yaml.text += nested.openAPISchemas() }
        yaml.line(2, "\(selectionName):")
        yaml.line(3, "description: A\(kind == .collection ? article + " " + elementName : " " + name); with `fields`, only the fields asked for.")
        yaml.line(3, "type: object")
        yaml.line(3, "additionalProperties: false")
        if kind == .collection { yaml.line(3, "required: [id]") }
        yaml.line(3, "properties:")
        if kind == .collection {
            yaml.line(4, "id:")
            yaml.line(5, "$ref: \"#/components/schemas/Id\"")
        }
        for member in members {
            switch member {
            case .field(let field) where field.isVisible:
                yaml.line(4, "\(field.name):")
                Self.valueSchema(&yaml, field, level: 5)
            case .field:
                continue
            case .computed(let computed):
                yaml.line(4, "\(computed.name):")
                Self.computedSchema(&yaml, computed, level: 5)
            case .collection(let collection):
                yaml.line(4, "\(collection.name):")
                yaml.line(5, "type: array")
                yaml.line(5, "items:")
                yaml.line(6, "$ref: \"#/components/schemas/\(collection.schemaName)\"")
            }
        }
        yaml.line(2, "\(schemaName):")
        yaml.line(3, "allOf:")
        yaml.line(4, "- $ref: \"#/components/schemas/\(selectionName)\"")
        yaml.line(3, "required: [\(selectableFields.joined(separator: ", "))]")
        return yaml.text
    }

    // MARK: - Operations

    /// `Donut`, `Truck`: the schema of the whole representation.
    var schemaName: String { (kind == .collection ? elementName : name).capitalizedFirst }
    var selectionName: String { schemaName + "Selection" }
    private var article: String { "aeiou".contains(elementName.first ?? "x") ? "n" : "" }

    /// The top-level collections a singleton shows (the truck's `donuts`
    /// and `orders`), each of which it can show a page at a time.
    private var shownCollections: [Resource] {
        guard kind == .singleton else { return [] }
        return members.compactMap { member in
            if case .collection(let collection) = member, collection.isTopLevel { return collection }
            return nil
        }
    }

    /// A page's query parameters: name, schema, what it does.
    static let pageParameters = [
        ("limit", "PageLimit", "at most this many elements; without it, all that follow `after`."),
        ("after", "PageAfter", "the elements after this one, in the page's order; take it from a `Link: rel=\"next\"`."),
        ("order", "PageOrder", "`asc` oldest first (the default), `desc` newest first."),
    ]

    private func tracking() -> String {
        switch kind {
        case .singleton where !shownCollections.isEmpty:
            let names = shownCollections.map { "`\($0.name)`" }.joined(separator: " and ")
            return "Tracks each field returned, as `\(path)/{field}`, and each collection shown as one read of its shape"
                + " (the collection, all its fields, the window of the page shown). \(names) can be shown a page at a time"
                + " (`{collection}.limit`, `.after`, `.order`), with a `Link` to the next page."
        case .singleton: return "Tracks each field returned, as `\(path)/{field}`."
        case .collection: return "Tracks `\(path)/{id}/{field}` for each field returned."
        }
    }

    /// A `GET` that reads: its `fields` (this model's parameter, or only
    /// `only`), the observer and `If-None-Match`, and the read's answers.
    private func getOperation(_ yaml: inout YAMLLines, id: String, summary: String, description: String, only: String? = nil,
                              pages: [String] = [], link: String? = nil, answer: String,
                              parameters: (inout YAMLLines) -> Void = { _ in }, schema: (inout YAMLLines, Int) -> Void)
    {
        yaml.line(2, "get:")
        header(&yaml, id: id, summary: summary, description: description)
        yaml.line(3, "parameters:")
        if let only {
            yaml.line(4, "- name: fields")
            Self.fieldsParameter(&yaml, level: 5, names: [only], description: "Only `\(only)`.")
        } else {
            yaml.line(4, "- $ref: \"#/components/parameters/\(schemaName)Fields\"")
        }
        for name in pages + ["ObserverHeader", "ObserverQuery", "IfNoneMatch"] {
            yaml.line(4, "- $ref: \"#/components/parameters/\(name)\"")
        }
        parameters(&yaml)
        yaml.line(3, "responses:")
        yaml.line(4, "\"200\":")
        yaml.line(5, "description: \(YAMLLines.quoted(answer))")
        yaml.line(5, "headers:")
        var headers = [("ETag", "ETag"), ("Observation-Cursor", "ObservationCursor"), ("Cache-Control", "CacheControlNoCache")]
        if let link { headers.append(("Link", link)) }
        for (header, component) in headers {
            yaml.line(6, "\(header):")
            yaml.line(7, "$ref: \"#/components/headers/\(component)\"")
        }
        Self.jsonContent(&yaml, level: 5, schema)
        Self.responses(&yaml, ["304": "NotModified", "400": "BadRequest", "401": "Unauthorized", "404": "NotFound",
                               "422": "TooManyReads", "503": "ServiceUnavailable", "507": "InsufficientStorage"])
    }

    private func readOperation(_ yaml: inout YAMLLines, id: String, summary: String, schema: String) {
        let pages = shownCollections.flatMap { collection in
            Self.pageParameters.map { schemaName + collection.name.capitalizedFirst + $0.0.capitalizedFirst }
        }
        getOperation(&yaml, id: id, summary: summary, description: tracking(), pages: pages, link: pages.isEmpty ? nil : "TitledLink",
                     answer: "The \(kind == .collection ? elementName : name), or its selected fields.") { yaml, level in
            yaml.line(level, "$ref: \"#/components/schemas/\(schema)\"")
        }
    }

    private func listOperation(_ yaml: inout YAMLLines) {
        getOperation(&yaml, id: "list\(name.capitalizedFirst)", summary: "List the \(name)",
                     description: "Tracks one read of its shape: `\(path)`, the fields selected and the window of the page"
                         + " (all of it without `limit`, `after` or `order`). Hears the insert of \(article == "n" ? "an" : "a") \(elementName) that lands in the"
                         + " window, the remove of one in it, and a set of a selected field of one in it (of any field of one made after the read).",
                     pages: ["PageLimit", "PageAfter", "PageOrder"], link: "Link",
                     answer: "The \(name), in creation order (newest first with `order=desc`), or one page of them"
                         + (queryable.isEmpty ? "." : "; with conditions, those that match; with `sort`, in its order."),
                     parameters: queryParameters) { yaml, level in
            yaml.line(level, "type: object")
            yaml.line(level, "additionalProperties: false")
            yaml.line(level, "required: [\(name)]")
            yaml.line(level, "properties:")
            yaml.line(level + 1, "\(name):")
            yaml.line(level + 2, "type: array")
            yaml.line(level + 2, "items:")
            yaml.line(level + 3, "$ref: \"#/components/schemas/\(selectionName)\"")
        }
    }

    /// A query read's parameters (SPEC §3d): a condition on each queryable
    /// field, and `sort`.
    private func queryParameters(_ yaml: inout YAMLLines) {
        guard !queryable.isEmpty else { return }
        for field in queryable {
            let kind: String
            switch field.kind {
            case .text: kind = "text"
            case .integer: kind = "a whole number"
            case .number: kind = "a number"
            case .boolean: kind = "`true` or `false`"
            }
            yaml.line(4, "- name: \(field.name)")
            yaml.line(5, "in: query")
            yaml.line(5, "description: " + YAMLLines.quoted("A condition on `\(field.name)` (\(kind)): `op.value` with `eq`, `neq`, `lt`, `lte`,"
                + " `gt`, `gte`, `in.(a,b,…)` (quote an item holding a comma: `\"a,b\"`), `is.null` or `not.is.null`. Repeat it for"
                + " several conditions on it (a range); every condition holds. Null meets only `is.null`. The read is then one query shape:"
                + " its reader hears the `insert` of \(article == "n" ? "an" : "a") \(elementName) that comes to match and falls in its window,"
                + " the `remove` of one that stops matching or leaves it, and a `set` of a shown field of one that stays, each with"
                + " `query` naming the read. A field that is not queryable is `400`."))
            // What the server takes, exactly: a value of the field's kind
            // after a comparison, a list of them in `in.(…)`, or a null test.
            let value: String
            switch field.kind {
            case .text: value = #"([^,()"\\]*|"([^"\\]|\\[\s\S])*")"#
            case .integer: value = "-?[0-9]{1,18}"
            case .number: value = #"-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,10})?"#
            case .boolean: value = "(true|false)"
            }
            let single = field.kind == .text ? #"[\s\S]*"# : value
            yaml.line(5, "schema:")
            yaml.line(6, "type: string")
            yaml.line(6, "pattern: '^((eq|neq|lt|lte|gt|gte)\\.\(single)|in\\.\\(\(value)(,\(value))*\\)|(not\\.)?is\\.null)$'")
        }
        yaml.line(4, "- name: sort")
        yaml.line(5, "in: query")
        yaml.line(5, "description: " + YAMLLines.quoted("Orders by a queryable field, ascending, or descending with `-`; ties by creation"
            + " (the newest first when descending); null after every value ascending. With `sort`, `order` is `400` and `after` is the"
            + " opaque cursor of a `Link: rel=\"next\"`."))
        yaml.line(5, "schema:")
        yaml.line(6, "type: string")
        yaml.line(6, "enum: [" + queryable.flatMap { [$0.name, "-" + $0.name] }.joined(separator: ", ") + "]")
    }

    private func createOperation(_ yaml: inout YAMLLines) {
        yaml.line(2, "post:")
        header(&yaml, id: "create\(schemaName)", summary: "Create a\(article) \(elementName)",
               description: "Changes: `insert \(path)`, whose `new` is the \(elementName).")
        body(&yaml, creatableFields, requireAll: true)
        writeAnswer(&yaml, status: "201", description: "The \(elementName).", headers: ["Location", "ETag"])
        Self.responses(&yaml, ["400": "BadRequest", "401": "Unauthorized", "413": "ContentTooLarge", "422": "UnprocessableContent",
                               "429": "TooManyRequests", "503": "ServiceUnavailable", "507": "InsufficientStorage"])
    }

    private func patchOperation(_ yaml: inout YAMLLines) {
        let fields = patchableFields
        yaml.line(2, "patch:")
        header(&yaml, id: "update\(schemaName)", summary: "Change fields of the \(kind == .collection ? elementName : name)",
               description: "`{}` changes nothing. Changes: one `set` of each field whose value changed, in one transaction.")
        yaml.line(3, "parameters:")
        yaml.line(4, "- $ref: \"#/components/parameters/IfMatch\"")
        body(&yaml, fields, requireAll: false)
        writeAnswer(&yaml, status: "200", description: "The whole \(kind == .collection ? elementName : name) after the change.",
                    headers: ["ETag"])
        var errors = ["400": "BadRequest", "401": "Unauthorized", "412": "PreconditionFailed", "413": "ContentTooLarge",
                      "422": "UnprocessableContent", "429": "TooManyRequests", "503": "ServiceUnavailable"]
        if kind == .collection { errors["404"] = "NotFound" }
        Self.responses(&yaml, errors)
    }

    /// The `responses:` of a write, opened with its answer: the whole
    /// representation, with `headers` (components of the same name).
    private func writeAnswer(_ yaml: inout YAMLLines, status: String, description: String, headers: [String]) {
        yaml.line(3, "responses:")
        yaml.line(4, "\"\(status)\":")
        yaml.line(5, "description: \(description)")
        yaml.line(5, "headers:")
        for header in headers {
            yaml.line(6, "\(header):")
            yaml.line(7, "$ref: \"#/components/headers/\(header)\"")
        }
        Self.jsonContent(&yaml, level: 5) { $0.line($1, "$ref: \"#/components/schemas/\(schemaName)\"") }
    }

    private func deleteOperation(_ yaml: inout YAMLLines) {
        yaml.line(2, "delete:")
        header(&yaml, id: "delete\(schemaName)", summary: "Delete a\(article) \(elementName)",
               description: "Changes: `remove \(path)`, whose `old` is the \(elementName).")
        yaml.line(3, "parameters:")
        yaml.line(4, "- $ref: \"#/components/parameters/IfMatch\"")
        yaml.line(3, "responses:")
        Self.responses(&yaml, ["204": "NoContent", "401": "Unauthorized", "404": "NotFound", "412": "PreconditionFailed",
                               "429": "TooManyRequests", "503": "ServiceUnavailable"])
    }

    private func computedOperation(_ yaml: inout YAMLLines, _ computed: Computed) {
        getOperation(&yaml, id: "get\(schemaName)\(computed.name.capitalizedFirst)", summary: "Read the computed \(computed.name)",
                     description: "Tracks `\(path)/\(computed.name)`.", only: computed.name,
                     answer: "The value of `\(computed.name)`.") { yaml, level in
            yaml.line(level, "type: object")
            yaml.line(level, "additionalProperties: false")
            yaml.line(level, "required: [\(computed.name)]")
            yaml.line(level, "properties:")
            yaml.line(level + 1, "\(computed.name):")
            Self.computedSchema(&yaml, computed, level: level + 2)
        }
    }

    private func header(_ yaml: inout YAMLLines, id: String, summary: String, description: String) {
        yaml.line(3, "tags: [\(tag)]")
        yaml.line(3, "operationId: \(id)")
        yaml.line(3, "summary: \(summary)")
        yaml.line(3, "description: \(YAMLLines.quoted(description))")
    }

    /// A JSON object body of `fields`, with their rules.
    private func body(_ yaml: inout YAMLLines, _ fields: [Field], requireAll: Bool) {
        yaml.line(3, "requestBody:")
        yaml.line(4, "required: true")
        Self.jsonContent(&yaml, level: 4) { yaml, level in
            yaml.line(level, "type: object")
            yaml.line(level, "additionalProperties: false")
            let required = fields.filter(\.isRequired).map(\.name)
            if requireAll && !required.isEmpty { yaml.line(level, "required: [\(required.joined(separator: ", "))]") }
            yaml.line(level, "properties:")
            for field in fields {
                yaml.line(level + 1, "\(field.name):")
                Self.bodySchema(&yaml, field, level: level + 2)
            }
        }
    }

    // MARK: - Schemas

    /// A field's value as a representation shows it.
    static func valueSchema(_ yaml: inout YAMLLines, _ field: Field, level: Int) {
        if let description = field.description { yaml.line(level, "description: \(YAMLLines.quoted(description))") }
        let type: String
        switch field.kind {
        case .text: type = "string"
        case .integer: type = "integer"
        case .number: type = "number"
        case .boolean: type = "boolean"
        }
        yaml.line(level, field.nullable ? "type: [\(type), \"null\"]" : "type: \(type)")
        if let range = field.range {
            yaml.line(level, "minimum: \(range.lowerBound)")
            yaml.line(level, "maximum: \(range.upperBound)")
        }
    }

    /// Text with a code point a reader sees, as a schema's `pattern` (one
    /// class, read alike by ECMA-262, Python and ICU): none of white space,
    /// controls, format characters and other default-ignorable code points
    /// (`TextLimits.isInvisible`) of the Basic Multilingual Plane. The
    /// `Text` schema of docs/openapi.yaml has the same; tests hold both to
    /// the rule, code point by code point.
    static let visibleTextPattern = #"[^\x00-\x20\x7f-\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"#
        + #"\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]"#

    /// A field's value as a request body must give it: its rules as keywords.
    static func bodySchema(_ yaml: inout YAMLLines, _ field: Field, level: Int) {
        let named: String?
        if let schema = field.schema {
            named = schema
        } else if field.kind == .text, let limits = field.limits, limits.maxLength == TextLimits.standard.maxLength,
                  limits.maxBytes == TextLimits.standard.maxBytes, !limits.allowsBlank
        {
            named = field.nullable ? "NullableText" : "Text"
        } else {
            named = nil
        }
        if let named, field.defaultValue == nil || field.nullable {
            yaml.line(level, "$ref: \"#/components/schemas/\(named)\"")
            return
        }
        if let named {
            yaml.line(level, "allOf:")
            yaml.line(level + 1, "- $ref: \"#/components/schemas/\(named)\"")
        } else {
            valueSchema(&yaml, field, level: level)
            if field.kind == .text, let limits = field.limits {
                yaml.line(level, "maxLength: \(limits.maxLength)")
                yaml.line(level, "x-maxBytes: \(limits.maxBytes)")
                if !limits.allowsBlank { yaml.line(level, "pattern: '\(visibleTextPattern)'") }
            }
        }
        if let value = field.defaultValue, value != .null { yaml.line(level, "default: \(JSONWriter.string(value))") }
    }

    static func computedSchema(_ yaml: inout YAMLLines, _ computed: Computed, level: Int) {
        if let description = computed.description { yaml.line(level, "description: \(YAMLLines.quoted(description + " (computed)"))") }
        switch computed.type {
        case .integer: yaml.line(level, "type: integer")
        case .boolean: yaml.line(level, "type: boolean")
        case .number: yaml.line(level, "type: number")
        case .text: yaml.line(level, "type: string")
        case .schema(let name): yaml.line(level, "$ref: \"#/components/schemas/\(name)\"")
        }
    }

    /// A `fields` query parameter (after its `name:` line) taking `names`.
    static func fieldsParameter(_ yaml: inout YAMLLines, level: Int, names: [String], description: String) {
        yaml.line(level, "in: query")
        yaml.line(level, "description: \(description)")
        yaml.line(level, "style: form")
        yaml.line(level, "explode: false")
        yaml.line(level, "schema:")
        yaml.line(level + 1, "type: array")
        yaml.line(level + 1, "minItems: 1")
        yaml.line(level + 1, "items:")
        yaml.line(level + 2, "type: string")
        yaml.line(level + 2, "enum: [\(names.joined(separator: ", "))]")
    }

    /// `content: application/json: schema:`, at `level`; `schema` writes
    /// the schema's keywords at the level it is given.
    static func jsonContent(_ yaml: inout YAMLLines, level: Int, _ schema: (inout YAMLLines, Int) -> Void) {
        yaml.line(level, "content:")
        yaml.line(level + 1, "application/json:")
        yaml.line(level + 2, "schema:")
        schema(&yaml, level + 3)
    }

    /// The `responses:` entries of an operation: `responses` and the two
    /// refusals any request can get before it is routed (its request line
    /// or its header fields past the connection memory).
    static func responses(_ yaml: inout YAMLLines, _ responses: [String: String]) {
        let responses = responses.merging(["414": "URITooLong", "431": "RequestHeaderFieldsTooLarge"]) { own, _ in own }
        for status in responses.keys.sorted() {
            yaml.line(4, "\"\(status)\":")
            yaml.line(5, "$ref: \"#/components/responses/\(responses[status]!)\"")
        }
    }
}

/// YAML text written line by line, two spaces per level.
struct YAMLLines {
    var text = ""

    mutating func line(_ level: Int, _ content: String) {
        text += String(repeating: "  ", count: level) + content + "\n"
    }

    /// `text` as a double-quoted YAML scalar.
    static func quoted(_ text: String) -> String {
        JSONWriter.string(.string(text))
    }
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
