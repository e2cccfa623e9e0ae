import JSON

/// A field declared once and named by this handle wherever code reads or
/// writes it: `job[Jobs.current]` is the job's `current` as an `Int64`, and
/// a misspelt handle does not compile. The declaration lists the handle
/// itself (`Resource.collection(…) { current; total }`), and an action's
/// input lists its field (`input: [Jobs.reported.field]`).
public struct Stored<Value: FieldValue>: Sendable {
    public let field: Field
    /// The field's JSON name.
    public var name: String { field.name }

    /// The handle of `field`, whose kind must be `Value`'s (checked when the
    /// declaration is made, at start-up).
    public init(_ field: Field) {
        precondition(field.kind == Value.kind, "\(field.name) is a \(field.kind) field, not one of \(Value.self)")
        self.field = field
    }
}

extension Stored {
    /// The field set to `value`, for `Record.new(_:_:)`: `Jobs.current.with(0)`.
    public func with(_ value: Value) -> (name: String, value: JSONValue) { (name, value.stored) }
}

extension MemberBuilder {
    public static func buildExpression<Value>(_ stored: Stored<Value>) -> [Resource.Member] { [.field(stored.field)] }
}

extension Record {
    /// The value of the field `field` names, typed. On a record of another
    /// model (a mistake `DeclarationTests` catches for the seed's models) it
    /// reads as `null` would and writes nothing.
    public subscript<Value>(field: Stored<Value>) -> Value {
        get { Value(stored: self[json: field]) }
        set { self[json: field] = newValue.stored }
    }

    /// The stored JSON value of the field `field` names, as it is kept.
    public subscript<Value>(json field: Stored<Value>) -> JSONValue {
        get { resource.fieldIndex[field.name].map { values[$0] } ?? .null }
        set { if let index = resource.fieldIndex[field.name] { values[index] = newValue } }
    }
}

extension Record {
    /// A new element of `resource` with a new id and the fields `values`
    /// sets (`[Jobs.current.with(0)]`), the rest at their defaults.
    public static func new(_ resource: Resource, id: String? = nil, in parentPath: String? = nil,
                           setting values: [(name: String, value: JSONValue)]) -> Record
    {
        new(resource, id: id, in: parentPath, Dictionary(values, uniquingKeysWith: { _, last in last }))
    }
}

extension ValidatedBody {
    /// The value given for the input field `field` names, typed; nil when
    /// the body left it out or gave `null`.
    public subscript<Value>(field: Stored<Value>) -> Value? {
        guard let value = values[field.name], value != .null else { return nil }
        return Value(stored: value)
    }
}
