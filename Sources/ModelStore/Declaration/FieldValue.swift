import JSON

/// The Swift type a field's value has in action code: `Int64` for an
/// integer field, `String` for text, `Bool`, `Double`, and an optional of
/// one of these for a field that may be `null`.
public protocol FieldValue: Sendable {
    /// The kind of field that holds such a value.
    static var kind: Field.Kind { get }
    /// The value `stored` holds (`0`, `""`, `false` for a `null` when not optional).
    init(stored: JSONValue)
    /// The value as it is stored.
    var stored: JSONValue { get }
}

extension Int64: FieldValue {
    public static var kind: Field.Kind { .integer }
    public init(stored: JSONValue) { self = stored.intValue ?? 0 }
    public var stored: JSONValue { .int(self) }
}

extension String: FieldValue {
    public static var kind: Field.Kind { .text }
    public init(stored: JSONValue) { self = stored.stringValue ?? "" }
    public var stored: JSONValue { .string(self) }
}

extension Bool: FieldValue {
    public static var kind: Field.Kind { .boolean }
    public init(stored: JSONValue) { self = stored.boolValue ?? false }
    public var stored: JSONValue { .bool(self) }
}

extension Double: FieldValue {
    public static var kind: Field.Kind { .number }
    public init(stored: JSONValue) {
        switch stored {
        case .double(let value): self = value
        case .int(let value): self = Double(value)
        default: self = 0
        }
    }
    public var stored: JSONValue { .double(self) }
}

extension Optional: FieldValue where Wrapped: FieldValue {
    public static var kind: Field.Kind { Wrapped.kind }
    public init(stored: JSONValue) { self = stored == .null ? nil : Wrapped(stored: stored) }
    public var stored: JSONValue { self?.stored ?? .null }
}
