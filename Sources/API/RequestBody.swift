import HTTPServer
import JSON
import ModelStore

/// A request's body: one JSON object, checked against the fields the
/// endpoint takes (`ValidatedBody`: unknown fields and wrong types `400`,
/// a missing required field or a broken rule `422`).
enum RequestBody {
    /// Parses the body of `request` and checks it against `fields`. An empty
    /// body counts as `{}` when `emptyAllowed`.
    static func validated(_ request: HTTPRequest, fields: [Field], requireAll: Bool, emptyAllowed: Bool = false) throws -> ValidatedBody {
        try ValidatedBody(object(request, emptyAllowed: emptyAllowed), fields: fields, requireAll: requireAll)
    }

    /// The body of `request` as a JSON object.
    static func object(_ request: HTTPRequest, emptyAllowed: Bool) throws -> JSONObject {
        // The body is parsed as JSON whatever its Content-Type says, so that
        // `curl -d '{…}'` (form-encoded by default) works as written.
        if request.body.isEmpty {
            guard emptyAllowed else { throw APIError(400, "A JSON body is required") }
            return JSONObject()
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(request.body)
        } catch {
            throw APIError(400, "Malformed JSON: \(error)")
        }
        guard let object = value.objectValue else {
            throw APIError(400, "The body must be a JSON object, not \(value.typeName)")
        }
        return object
    }
}
