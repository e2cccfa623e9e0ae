import JSON

/// A body checked against a list of fields: what a create, a patch or an
/// action's input derives its validation from.
///
/// Unknown fields and wrong types are `badRequest`; a missing required field
/// or a value that breaks a field's rule is `unprocessable`. Values are normalised to their
/// field's kind (`2.0` is the integer 2; an integer is a number).
public struct ValidatedBody: Sendable {
    /// The values given, by field name.
    public private(set) var values: [String: JSONValue] = [:]

    /// Checks `body` against `fields`. `requireAll` makes every required
    /// field of `fields` (no default) mandatory, as a create does.
    public init(_ body: JSONObject, fields: [Field], requireAll: Bool) throws {
        for key in body.keys where !fields.contains(where: { $0.name == key }) {
            throw ModelError.badRequest("Unknown field \"\(key)\"; allowed: \(fields.map(\.name).joined(separator: ", "))")
        }
        // By index: a loop over `fields` would copy every declaration.
        for index in fields.indices {
            guard let value = body[fields[index].name] else { continue }
            values[fields[index].name] = try Self.typed(value, fields[index])
        }
        for index in fields.indices {
            guard let value = values[fields[index].name] else {
                if requireAll && fields[index].isRequired { throw ModelError.unprocessable("\(fields[index].name) is required") }
                continue
            }
            if value != .null {
                for rule in fields[index].rules { try rule(fields[index].name, value) }
            }
        }
    }

    public subscript(name: String) -> JSONValue? { values[name] }
    public func string(_ name: String) -> String? { values[name]?.stringValue }
    public func int(_ name: String) -> Int64? { values[name]?.intValue }

    /// `value` as a value of `field`'s kind, or the `badRequest` that says why not.
    static func typed(_ value: JSONValue, _ field: Field) throws(ModelError) -> JSONValue {
        let name = field.name
        if value == .null {
            guard field.nullable else { throw ModelError.badRequest("\(name) must be \(article(field.kind)), not null") }
            return .null
        }
        let orNull = field.nullable ? " or null" : ""
        switch (field.kind, value) {
        case (.text, .string), (.boolean, .bool), (.integer, .int):
            return value
        case (.number, .int(let int)):
            return .double(Double(int))
        case (.number, .double):
            return value
        case (.integer, .double(let double)) where double.rounded() == double && abs(double) >= 9.0e15:
            // Digits past what an integer holds, or 1e30: no field accepts it.
            throw ModelError.unprocessable("\(name) is out of range")
        case (.integer, .double):
            // 2.0, 1e2, -0.0: a JSON integer is digits only.
            throw ModelError.badRequest("\(name) must be an integer\(orNull), written as digits only (no fraction or exponent)")
        default:
            throw ModelError.badRequest("\(name) must be \(article(field.kind))\(orNull), not \(value.typeName)")
        }
    }

    private static func article(_ kind: Field.Kind) -> String {
        switch kind {
        case .text: return "a string"
        case .integer: return "an integer"
        case .number: return "a number"
        case .boolean: return "a boolean"
        }
    }
}
