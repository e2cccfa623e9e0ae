import Foundation
import TestSupport

/// A JSON value as the tests see it: answers are parsed, and request bodies
/// written, with Foundation's `JSONSerialization`, never with the server's
/// own JSON code, so that a fault there cannot hide itself in the tests.
///
/// Objects are dictionaries: they compare regardless of the order of their
/// keys (Foundation keeps none). A test that pins the order of keys down
/// reads it from the answer's text (`TestResponse.keyOrder`).
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer; a number written with a fraction or an exponent is a
    /// double and has none.
    var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }
}

typealias JSONObject = [String: JSONValue]

extension JSONValue {
    /// Parses `bytes` with Foundation.
    init(parsing bytes: [UInt8]) throws {
        try self.init(foundation: JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]))
    }

    /// Converts what `JSONSerialization` made.
    init(foundation value: Any) throws {
        switch value {
        case is NSNull:
            self = .null
        case let number as NSNumber:
            self = Self.number(number)
        case let string as String:
            self = .string(string)
        case let array as [Any]:
            self = .array(try array.map(JSONValue.init(foundation:)))
        case let object as [String: Any]:
            self = .object(try object.mapValues(JSONValue.init(foundation:)))
        default:
            throw TestHTTPError.io("not a JSON value: \(type(of: value))")
        }
    }

    /// Booleans and numbers are both `NSNumber`s, and an `NSNumber` made
    /// from a number converts to `Bool` as well: its type code tells them
    /// apart. `JSONSerialization` makes booleans with type `c` (and no
    /// other number of that type), doubles with `d`, integers with `i` or
    /// `q`, and integers beyond those (or exactly `Int64.min`) as decimals.
    private static func number(_ number: NSNumber) -> JSONValue {
        if let decimal = number as? NSDecimalNumber {
            // Exact when it is an integer that fits; otherwise a double.
            let integer = decimal.int64Value
            return Decimal(integer) == decimal.decimalValue ? .int(integer) : .double(decimal.doubleValue)
        }
        switch String(cString: number.objCType) {
        case "c", "B": return .bool(number.boolValue)
        case "d", "f": return .double(number.doubleValue)
        default: return .int(number.int64Value)
        }
    }

    /// What `JSONSerialization` writes.
    var foundation: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return NSNumber(value: b)
        case .int(let i): return NSNumber(value: i)
        case .double(let d): return NSNumber(value: d)
        case .string(let s): return s
        case .array(let a): return a.map(\.foundation)
        case .object(let o): return o.mapValues(\.foundation)
        }
    }

    /// This value written by Foundation, as a request body. (Foundation
    /// writes a double without a fraction as an integer: `2.0` as `2`.)
    var bytes: [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: foundation, options: [.fragmentsAllowed, .sortedKeys])) ?? Data())
    }

    /// This value as compact JSON text, keys sorted: for messages and
    /// comparisons of small values.
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

extension JSONValue: CustomStringConvertible {
    var description: String { text }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .int(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(nilLiteral: ()) { self = .null }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(floatLiteral value: Double) { self = .double(value) }
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue {
    /// The `changes` array of a feed answer.
    var changeList: [JSONValue] { self["changes"]?.arrayValue ?? [] }
    var changePaths: [String] { changeList.compactMap { $0["path"]?.stringValue } }
}
