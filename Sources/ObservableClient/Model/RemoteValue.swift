import Foundation
import JSON

/// A value a field of a `@RemoteModel` can hold: decoded from the server's
/// JSON, and written back as the server writes it (for `If-Match`).
///
/// `String`, `Int`, `Double`, `Bool`, their optionals (JSON `null` is nil)
/// and arrays conform. So does a type of your own that is `Codable` and
/// `Equatable`, with an empty conformance: `extension Size: RemoteValue {}`.
public protocol RemoteValue: Equatable {
    /// The value a JSON value stands for; nil when it is not one (the field
    /// keeps what it held).
    init?(remoteJSON: JSONValue)
    /// The value as JSON.
    var remoteJSON: JSONValue { get }
}

/// The value a field starts with when its declaration gives none (`var name: String`).
public protocol RemoteDefaultValue {
    static var remoteDefault: Self { get }
}

extension String: RemoteValue, RemoteDefaultValue {
    public init?(remoteJSON: JSONValue) {
        guard let value = remoteJSON.stringValue else { return nil }
        self = value
    }
    public var remoteJSON: JSONValue { .string(self) }
    public static var remoteDefault: String { "" }
}

extension Int: RemoteValue, RemoteDefaultValue {
    public init?(remoteJSON: JSONValue) {
        switch remoteJSON {
        case .int(let value): self = Int(value)
        case .double(let value) where value.rounded() == value && abs(value) < 1e15: self = Int(value)
        default: return nil
        }
    }
    public var remoteJSON: JSONValue { .int(Int64(self)) }
    public static var remoteDefault: Int { 0 }
}

extension Double: RemoteValue, RemoteDefaultValue {
    public init?(remoteJSON: JSONValue) {
        switch remoteJSON {
        case .int(let value): self = Double(value)
        case .double(let value): self = value
        default: return nil
        }
    }
    /// Written as the server writes a number: `300` for a whole one, `120.5` otherwise.
    public var remoteJSON: JSONValue { .double(self) }
    public static var remoteDefault: Double { 0 }
}

extension Bool: RemoteValue, RemoteDefaultValue {
    public init?(remoteJSON: JSONValue) {
        guard let value = remoteJSON.boolValue else { return nil }
        self = value
    }
    public var remoteJSON: JSONValue { .bool(self) }
    public static var remoteDefault: Bool { false }
}

extension Optional: RemoteValue where Wrapped: RemoteValue {
    public init?(remoteJSON: JSONValue) {
        if case .null = remoteJSON {
            self = .none
        } else if let value = Wrapped(remoteJSON: remoteJSON) {
            self = .some(value)
        } else {
            return nil
        }
    }
    public var remoteJSON: JSONValue { map(\.remoteJSON) ?? .null }
}

extension Optional: RemoteDefaultValue {
    public static var remoteDefault: Wrapped? { nil }
}

extension Array: RemoteValue where Element: RemoteValue {
    public init?(remoteJSON: JSONValue) {
        guard let items = remoteJSON.arrayValue else { return nil }
        var values: [Element] = []
        values.reserveCapacity(items.count)
        for item in items {
            guard let value = Element(remoteJSON: item) else { return nil }
            values.append(value)
        }
        self = values
    }
    public var remoteJSON: JSONValue { .array(map(\.remoteJSON)) }
}

extension Array: RemoteDefaultValue {
    public static var remoteDefault: [Element] { [] }
}

extension RemoteValue where Self: Codable {
    /// Decodes the value with `JSONDecoder` from the server's JSON.
    public init?(remoteJSON: JSONValue) {
        guard let value = try? JSONDecoder().decode(Self.self, from: Data(JSONWriter.bytes(remoteJSON))) else { return nil }
        self = value
    }

    /// Encodes the value with `JSONEncoder`, in the order its `CodingKeys`
    /// are declared (the order the server writes them, for `If-Match`).
    public var remoteJSON: JSONValue {
        guard let data = try? JSONEncoder().encode(self), let json = try? JSONParser.parse(Array(data)) else { return .null }
        return json
    }
}
