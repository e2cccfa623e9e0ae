import JSON

/// One stored property of a model, declared once: its JSON name, type,
/// rules and column. Everything else (loading, validation, the
/// representation, change recording, SQL, the API reference) is derived from it.
public struct Field: Sendable {
    public enum Kind: String, Sendable {
        case text, integer, number, boolean
    }

    /// Who sets the field.
    public enum Access: Sendable {
        /// Clients set it on create and change it with a patch.
        case writable
        /// Clients set it on create; it never changes after.
        case createOnly
        /// Only the server's actions set it; clients read it.
        case serverOnly
        /// Stored, set by actions, never shown: computed properties use it.
        case hidden
    }

    /// A rule on a value of the right type; throws an `unprocessable` refusal that names the field.
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

    /// Text; by default not blank, at most 200 characters and 800 bytes.
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

    /// The text limits and integer range, kept for the API reference (and
    /// the range for the column's check).
    public internal(set) var limits: TextLimits?
    public internal(set) var range: ClosedRange<Int64>?

    /// A condition its column checks on every row, beyond what the type,
    /// `nullable` and `range` say: a rule of the data that holds whoever
    /// writes it (a job's step is at least 1, a height above 0).
    public enum Check: Sendable {
        case atLeast(Int64)
        case above(Double)
    }

    /// Conditions its column checks (`checked(_:)`).
    var storedChecks: [Check] = []

    /// This field, its column checking `check` too.
    public func checked(_ check: Check) -> Field {
        var field = self
        field.storedChecks.append(check)
        return field
    }

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
    public var isRequired: Bool { defaultValue.map { _ in false } ?? (!isOptional && (access == .writable || access == .createOnly)) }
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
