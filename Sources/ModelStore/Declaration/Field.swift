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

/// Limits on a text field's value: in characters (Unicode code points, as
/// JSON Schema's `maxLength` counts them, so the API reference states the
/// rule exactly), in bytes (what storing, logging and sending it costs),
/// and in code points per character a reader sees (a grapheme cluster: so
/// no one of them is a wall of combining marks).
public struct TextLimits: Sendable {
    public var maxLength: Int
    /// At most this many bytes in UTF-8; `4 × maxLength` unless given, so
    /// that any text of at most `maxLength` code points fits.
    public var maxBytes: Int
    public var allowsBlank: Bool

    /// The most code points one character may combine. The longest
    /// characters of real text (emoji ZWJ sequences such as a kiss with two
    /// skin tones, subdivision flags, Indic conjuncts) have about ten.
    public static let maxScalarsPerCharacter = 16

    public init(maxLength: Int, maxBytes: Int? = nil, allowsBlank: Bool = false) {
        self.maxLength = maxLength
        self.maxBytes = maxBytes ?? 4 * maxLength
        self.allowsBlank = allowsBlank
    }

    /// Not blank, at most 200 characters (and 800 bytes): names and labels.
    public static let standard = TextLimits(maxLength: 200)

    var rule: Field.Rule {
        let limits = self
        return { name, value in
            guard let text = value.stringValue else { return }
            if !limits.allowsBlank && Self.isBlank(text) { throw ModelError.unprocessable("\(name) must not be empty") }
            // Characters are code points, as the API reference's `maxLength`
            // counts them; no more than there are bytes, so only a text of
            // more bytes than the limit is counted. The walk stops after
            // `maxLength + 1`: a megabyte of letters costs no more than 201.
            var count = 0
            if text.utf8.count > limits.maxLength {
                for _ in text.unicodeScalars {
                    count += 1
                    if count > limits.maxLength { break }
                }
            }
            if count > limits.maxLength { throw ModelError.unprocessable("\(name) must be at most \(limits.maxLength) characters") }
            if text.utf8.count > limits.maxBytes {
                throw ModelError.unprocessable("\(name) must be at most \(limits.maxBytes) bytes in UTF-8")
            }
            // What a reader sees as one character (a grapheme cluster) combines at most 16 code points.
            var longest = 0, index = text.startIndex
            while index < text.endIndex {
                let next = text.index(after: index)
                longest = max(longest, text.unicodeScalars.distance(from: index, to: next))
                index = next
            }
            if longest > Self.maxScalarsPerCharacter {
                throw ModelError.unprocessable(
                    "\(name) must not combine more than \(Self.maxScalarsPerCharacter) code points into one character")
            }
        }
    }

    /// Whether a reader would see nothing: every character is white space
    /// (its first code point is, as `Character.isWhitespace` says) or made
    /// only of invisible code points.
    static func isBlank(_ text: String) -> Bool {
        text.allSatisfy { $0.isWhitespace || $0.unicodeScalars.allSatisfy(isInvisible) }
    }

    /// White space, controls, format characters (Cf: U+200B ZERO WIDTH SPACE,
    /// U+FEFF, U+00AD SOFT HYPHEN, U+2060 WORD JOINER, bidi marks, tags) and
    /// the other default-ignorable code points (U+3164 HANGUL FILLER,
    /// variation selectors, U+034F COMBINING GRAPHEME JOINER): by Unicode's
    /// properties, not a list.
    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .format, .control: return true
        default: return properties.isWhitespace || properties.isDefaultIgnorableCodePoint
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
