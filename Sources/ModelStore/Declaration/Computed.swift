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

    public init(_ name: String, _ type: ValueType, description: String? = nil,
                _ value: @escaping @Sendable (ModelState, Record) -> JSONValue)
    {
        self.name = name
        self.type = type
        self.description = description
        self.value = value
    }
}
