import Foundation

/// The keys of each object of an answer, in the order its text has them.
///
/// `JSONValue` (Foundation's parser) keeps no order, so a test that pins
/// down the order of an answer's keys reads it here, from the bytes. Only
/// the structure is read; values are checked through `TestResponse.json`.
indirect enum KeyOrder: Equatable {
    case object([Member])
    case array([KeyOrder])
    /// A string, number, boolean or null.
    case scalar

    struct Member: Equatable {
        let key: String
        let value: KeyOrder
    }

    /// Reads `bytes`; nil when they are not one JSON value.
    init?(_ bytes: [UInt8]) {
        var reader = Reader(bytes: bytes)
        guard let value = reader.value() else { return nil }
        reader.skipWhitespace()
        guard reader.position == bytes.count else { return nil }
        self = value
    }

    /// An object's keys, in written order.
    var keys: [String]? {
        if case .object(let members) = self { return members.map(\.key) }
        return nil
    }

    var elements: [KeyOrder]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    subscript(key: String) -> KeyOrder? {
        if case .object(let members) = self { return members.first { $0.key == key }?.value }
        return nil
    }

    subscript(index: Int) -> KeyOrder? {
        guard let elements, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// A recursive-descent reader of the structure.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        mutating func skipWhitespace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func value() -> KeyOrder? {
            skipWhitespace()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "{"): return object()
            case UInt8(ascii: "["): return array()
            case UInt8(ascii: "\""): return string() == nil ? nil : .scalar
            default:
                // A number or literal: up to the next delimiter.
                let start = position
                while position < bytes.count, !Array(",]} \t\n\r".utf8).contains(bytes[position]) { position += 1 }
                return position > start ? .scalar : nil
            }
        }

        mutating func object() -> KeyOrder? {
            position += 1
            var members: [Member] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard let key = string() else { return nil }
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                position += 1
                guard let value = value() else { return nil }
                members.append(Member(key: key, value: value))
                skipWhitespace()
                guard position < bytes.count else { return nil }
                position += 1
                if bytes[position - 1] == UInt8(ascii: "}") { return .object(members) }
                guard bytes[position - 1] == UInt8(ascii: ",") else { return nil }
            }
        }

        mutating func array() -> KeyOrder? {
            position += 1
            var elements: [KeyOrder] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                guard let element = value() else { return nil }
                elements.append(element)
                skipWhitespace()
                guard position < bytes.count else { return nil }
                position += 1
                if bytes[position - 1] == UInt8(ascii: "]") { return .array(elements) }
                guard bytes[position - 1] == UInt8(ascii: ",") else { return nil }
            }
        }

        /// A string token, decoded by Foundation (escapes and all).
        mutating func string() -> String? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
            let start = position
            position += 1
            while position < bytes.count, bytes[position] != UInt8(ascii: "\"") {
                position += bytes[position] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard position < bytes.count else { return nil }
            position += 1
            let token = Data(bytes[start..<position])
            return (try? JSONSerialization.jsonObject(with: token, options: [.fragmentsAllowed])) as? String
        }
    }
}

extension TestResponse {
    /// The order of the keys in this answer's text.
    var keyOrder: KeyOrder? { KeyOrder(body) }
}
