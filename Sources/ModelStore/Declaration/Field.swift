import JSON

/// One stored property of a model, declared once: its JSON name, type,
/// rules and column. Everything else (loading, validation, the
/// representation, change recording, SQL, OpenAPI) is derived from it.
public struct Field: Sendable {
    public enum Kind: String, Sendable {
        case text, integer, number, boolean
    }

    /// Who sets the field.
    public enum Access: Sendable {
        /// Clients set it on create and change it with `PATCH`.
        case writable
        /// Clients set it on create; it never changes after.
        case createOnly
        /// Only the server's actions set it; clients read it.
        case serverOnly
        /// Stored, set by actions, never shown: computed properties use it.
        case hidden
    }

    /// A rule on a value of the right type; throws a `422` that names the field.
    public typealias Rule = @Sendable (_ name: String, _ value: JSONValue) throws -> Void

    /// The JSON name, which is also the last segment of its path.
    public let name: String
    /// The SQL column: the JSON name in snake case unless given.
    public let column: String
    public let kind: Kind
    public let nullable: Bool
    /// The value a create without it takes; nil makes a writable field required.
    public let defaultValue: JSONValue?
    public let access: Access
    let rules: [Rule]
    /// What the API reference says of it, beyond its type and rules.
    public let description: String?
    /// A schema of the API reference that states rules no keyword derived
    /// from the declaration can (a URL's form), used for request bodies.
    public let schema: String?

    public init(_ name: String, _ kind: Kind, column: String? = nil, nullable: Bool = false, default defaultValue: JSONValue? = nil,
                access: Access = .writable, rules: [Rule] = [], description: String? = nil, schema: String? = nil)
    {
        self.description = description
        self.schema = schema
        self.name = name
        self.column = column ?? Self.snakeCase(name)
        self.kind = kind
        self.nullable = nullable
        // Spelled out: `nil` alone could be taken for JSON's `null`.
        if let defaultValue {
            self.defaultValue = defaultValue
        } else {
            self.defaultValue = nullable ? JSONValue.null : Optional<JSONValue>.none
        }
        self.access = access
        self.rules = rules
    }

    /// Text; by default not blank and at most 200 characters.
    public static func text(_ name: String, column: String? = nil, nullable: Bool = false, default value: String? = nil,
                            access: Access = .writable, limits: TextLimits? = .standard, rules: [Rule] = [],
                            description: String? = nil, schema: String? = nil) -> Field
    {
        var field = Field(name, .text, column: column, nullable: nullable, default: value.map(JSONValue.string), access: access,
                          rules: (limits.map { [$0.rule] } ?? []) + rules, description: description, schema: schema)
        field.limits = limits
        return field
    }

    /// A whole number, optionally within `range`.
    public static func integer(_ name: String, column: String? = nil, nullable: Bool = false, default value: Int64? = nil,
                               access: Access = .writable, range: ClosedRange<Int64>? = nil, description: String? = nil) -> Field
    {
        let rules: [Rule] = range.map { range in
            [{ name, value in
                if let int = value.intValue, !range.contains(int) {
                    throw ModelError.unprocessable("\(name) must be between \(range.lowerBound) and \(range.upperBound)")
                }
            }]
        } ?? []
        var field = Field(name, .integer, column: column, nullable: nullable, default: value.map(JSONValue.int), access: access,
                          rules: rules, description: description)
        field.range = range
        return field
    }

    /// A number, whole or not.
    public static func number(_ name: String, column: String? = nil, access: Access = .writable, rules: [Rule] = [],
                              description: String? = nil, schema: String? = nil) -> Field
    {
        Field(name, .number, column: column, access: access, rules: rules, description: description, schema: schema)
    }

    public static func boolean(_ name: String, column: String? = nil, default value: Bool? = nil, access: Access = .writable,
                               description: String? = nil) -> Field
    {
        Field(name, .boolean, column: column, default: value.map(JSONValue.bool), access: access, description: description)
    }

    /// The text limits and integer range, kept for the API reference.
    var limits: TextLimits?
    var range: ClosedRange<Int64>?
    /// Whether a body may leave it out though it has no default.
    var isOptional = false

    /// This field, which a body may leave out (an action's optional input).
    public var optional: Field {
        var field = self
        field.isOptional = true
        return field
    }

    /// This field, required in a body whatever its default (an action's input).
    public var required: Field {
        var field = Field(name, kind, column: column, nullable: false, default: Optional<JSONValue>.none, access: .writable,
                          rules: rules, description: description, schema: schema)
        field.limits = limits
        field.range = range
        return field
    }

    /// Whether a create must name it.
    var isRequired: Bool { defaultValue.map { _ in false } ?? (!isOptional && (access == .writable || access == .createOnly)) }
    /// Whether it appears in the representation (and so is read and changes).
    public var isVisible: Bool { access != .hidden }

    /// `imageURL` → `image_url`, `isTapAnimated` → `is_tap_animated`.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        var previousWasUpper = true
        for character in name {
            if character.isUppercase {
                if !previousWasUpper { result.append("_") }
                result.append(Character(character.lowercased()))
                previousWasUpper = true
            } else {
                result.append(character)
                previousWasUpper = false
            }
        }
        return result
    }
}

/// Limits on a text field's value.
public struct TextLimits: Sendable {
    public var maxLength: Int
    public var allowsBlank: Bool

    public init(maxLength: Int, allowsBlank: Bool = false) {
        self.maxLength = maxLength
        self.allowsBlank = allowsBlank
    }

    /// Not blank, at most 200 characters: names and labels.
    public static let standard = TextLimits(maxLength: 200)

    var rule: Field.Rule {
        let limits = self
        return { name, value in
            guard let text = value.stringValue else { return }
            if !limits.allowsBlank && text.allSatisfy(\.isWhitespace) { throw ModelError.unprocessable("\(name) must not be empty") }
            if text.count > limits.maxLength { throw ModelError.unprocessable("\(name) must be at most \(limits.maxLength) characters") }
        }
    }
}

/// A property whose value is a function of the state: reported under its
/// own path when its value changes, with old and new.
public struct Computed: Sendable {
    /// What a computed value is, for the API reference.
    public enum ValueType: Sendable {
        case integer, boolean, number, text
        /// A schema of the API reference (an object's shape).
        case schema(String)
    }

    public let name: String
    public let type: ValueType
    public let description: String?
    let value: @Sendable (ModelState, Record) -> JSONValue

    public init(_ name: String, _ type: ValueType, description: String? = nil,
                _ value: @escaping @Sendable (ModelState, Record) -> JSONValue)
    {
        self.name = name
        self.type = type
        self.description = description
        self.value = value
    }
}
