import HTTPServer
import JSON

/// A request's JSON object body, read field by field: wrong types and
/// fields the endpoint does not know are `400`.
struct RequestBody {
    let object: JSONObject

    /// Parses the body of `request` as a JSON object whose keys are all in
    /// `allowed`. An empty body counts as `{}` when `emptyAllowed`.
    init(_ request: HTTPRequest, allowed: [String], emptyAllowed: Bool = false) throws {
        // The body is parsed as JSON whatever its Content-Type says, so that
        // `curl -d '{…}'` (form-encoded by default) works as written.
        if request.body.isEmpty {
            guard emptyAllowed else { throw APIError(400, "A JSON body is required") }
            object = JSONObject()
            return
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
        for key in object.keys where !allowed.contains(key) {
            throw APIError(400, "Unknown field \"\(key)\"; allowed: \(allowed.joined(separator: ", "))")
        }
        self.object = object
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    /// A string field; nil when absent. `null` is a wrong type.
    func string(_ key: String) throws -> String? {
        guard let value = object[key] else { return nil }
        guard let string = value.stringValue else { throw APIError(400, "\(key) must be a string, not \(value.typeName)") }
        return string
    }

    /// A string-or-null field: absent is nil, `null` is `.some(nil)`.
    func nullableString(_ key: String) throws -> String?? {
        guard let value = object[key] else { return nil }
        if value.isNull { return .some(nil) }
        guard let string = value.stringValue else { throw APIError(400, "\(key) must be a string or null, not \(value.typeName)") }
        return .some(string)
    }

    /// An integer field; nil when absent. Fractions are a wrong type; integers
    /// beyond 64 bits are out of range for every field (`422`).
    func integer(_ key: String) throws -> Int64? {
        guard let value = object[key] else { return nil }
        switch value {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d:
            // 2.0 is the integer 2; 1e30 is an integer no field accepts.
            guard abs(d) < 9.0e15 else { throw APIError(422, "\(key) is out of range") }
            return Int64(d)
        default: throw APIError(400, "\(key) must be an integer, not \(value.typeName == "number" ? "a fraction" : value.typeName)")
        }
    }

    /// A number field (integer or fraction); nil when absent.
    func number(_ key: String) throws -> Double? {
        switch object[key] {
        case nil: return nil
        case .int(let value)?: return Double(value)
        case .double(let value)?: return value
        case let value?: throw APIError(400, "\(key) must be a number, not \(value.typeName)")
        }
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = object[key] else { return nil }
        guard let bool = value.boolValue else { throw APIError(400, "\(key) must be a boolean, not \(value.typeName)") }
        return bool
    }
}
