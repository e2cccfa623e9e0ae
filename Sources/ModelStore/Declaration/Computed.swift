import JSON

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
    /// The value as a function of the element (or object) alone, when it
    /// is one: a query by it is answered through an index kept with the
    /// elements (`QueryIndex`), as a stored field's is.
    let elementValue: (@Sendable (Record) -> JSONValue)?

    /// A value of the whole state (an order count).
    public init(_ name: String, _ type: ValueType, description: String? = nil,
                _ value: @escaping @Sendable (ModelState, Record) -> JSONValue)
    {
        self.name = name
        self.type = type
        self.description = description
        self.value = value
        elementValue = nil
    }

    /// A value of the element alone, its nested elements included (a job's
    /// `isComplete`, a game's `isOver`).
    public init(_ name: String, _ type: ValueType, description: String? = nil,
                _ value: @escaping @Sendable (Record) -> JSONValue)
    {
        self.name = name
        self.type = type
        self.description = description
        self.value = { _, record in value(record) }
        elementValue = value
    }
}
