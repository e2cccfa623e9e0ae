/// A JSON object with its keys in insertion order.
public struct JSONObject: Sendable, Equatable {
    public private(set) var entries: [(key: String, value: JSONValue)] = []

    public init() {}

    public init(_ entries: KeyValuePairs<String, JSONValue>) {
        for (k, v) in entries { self[k] = v }
    }

    public subscript(key: String) -> JSONValue? {
        get { entries.first { $0.key == key }?.value }
        set {
            if let index = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[index].value = newValue } else { entries.remove(at: index) }
            } else if let newValue {
                entries.append((key, newValue))
            }
        }
    }

    /// Adds `key` at the end without looking for it first: for builders that
    /// know their keys are distinct (a duplicate would be written twice).
    public mutating func append(_ key: String, _ value: JSONValue) {
        assert(!entries.contains { $0.key == key }, "duplicate key \(key)")
        entries.append((key, value))
    }

    /// Adds `key` at the end, unchecked even in debug builds: for the parser,
    /// which has already refused a repeated key.
    mutating func appendParsed(_ key: String, _ value: JSONValue) {
        entries.append((key, value))
    }

    public var keys: [String] { entries.map(\.key) }
    public var count: Int { entries.count }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}
