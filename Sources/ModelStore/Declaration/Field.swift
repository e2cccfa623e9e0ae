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

    public init(_ name: String, _ kind: Kind, column: String? = nil, nullable: Bool = false, default defaultValue: JSONValue? = nil,
                access: Access = .writable, rules: [Rule] = [])
    {
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
                            access: Access = .writable, limits: TextLimits? = .standard, rules: [Rule] = []) -> Field
    {
        Field(name, .text, column: column, nullable: nullable, default: value.map(JSONValue.string), access: access,
              rules: (limits.map { [$0.rule] } ?? []) + rules)
    }

    /// A whole number, optionally within `range`.
    public static func integer(_ name: String, column: String? = nil, nullable: Bool = false, default value: Int64? = nil,
                               access: Access = .writable, range: ClosedRange<Int64>? = nil) -> Field
    {
        let rules: [Rule] = range.map { range in
            [{ name, value in
                if let int = value.intValue, !range.contains(int) {
                    throw ModelError.unprocessable("\(name) must be between \(range.lowerBound) and \(range.upperBound)")
                }
            }]
        } ?? []
        return Field(name, .integer, column: column, nullable: nullable, default: value.map(JSONValue.int), access: access, rules: rules)
    }

    /// A number, whole or not.
    public static func number(_ name: String, column: String? = nil, access: Access = .writable, rules: [Rule] = []) -> Field {
        Field(name, .number, column: column, access: access, rules: rules)
    }

    public static func boolean(_ name: String, column: String? = nil, default value: Bool? = nil, access: Access = .writable) -> Field {
        Field(name, .boolean, column: column, default: value.map(JSONValue.bool), access: access)
    }

    /// This field, required in a body whatever its default (an action's input).
    public var required: Field {
        Field(name, kind, column: column, nullable: false, default: Optional<JSONValue>.none, access: .writable, rules: rules)
    }

    /// Whether a create must name it.
    var isRequired: Bool { defaultValue.map { _ in false } ?? (access == .writable || access == .createOnly) }
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
    public let name: String
    let value: @Sendable (ModelState, Record) -> JSONValue

    public init(_ name: String, _ value: @escaping @Sendable (ModelState, Record) -> JSONValue) {
        self.name = name
        self.value = value
    }
}
