import Concurrency
import JSON

/// A bounded table of the values seen lately, so that equal values loaded or
/// made apart share one copy: a million orders of a few donuts then hold a
/// few donut ids and a few value arrays, not a million of each.
///
/// Direct-mapped: a value takes the slot its hash picks, pushing out what
/// was there, so values that never repeat cost at most the table's size.
/// Equal means the same bytes (not Unicode equivalence) and, for numbers,
/// the same bits, so a shared copy always writes as the original would.
/// Not thread-safe: `shared` is used under its lock.
package final class ValueInterner {
    static let slotCount = 4096
    /// Longer text is kept as it comes: two long texts are seldom equal.
    static let longestString = 64
    /// Text of up to 15 bytes lives inside the string value, with nothing to share.
    static let shortestShared = 16

    /// What records made one at a time (a create, a row from another
    /// instance) share.
    static let shared = Exclusive(ValueInterner())

    private var strings = [String?](repeating: nil, count: slotCount)
    private var rows = [[JSONValue]?](repeating: nil, count: slotCount)

    /// The string of UTF-8 `bytes`: a kept one when it has the same bytes.
    package func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard bytes.count >= Self.shortestShared, bytes.count <= Self.longestString else {
            return String(decoding: bytes, as: UTF8.self)
        }
        let slot = Self.slot(Self.hash(bytes, into: Self.seed))
        if let kept = strings[slot], Self.same(kept, bytes) { return kept }
        let made = String(decoding: bytes, as: UTF8.self)
        strings[slot] = made
        return made
    }

    /// `text`, or a kept string with the same bytes.
    func string(_ text: String) -> String {
        let count = text.utf8.count
        guard count >= Self.shortestShared, count <= Self.longestString else { return text }
        let slot = Self.slot(Self.hash(text, into: Self.seed))
        if let kept = strings[slot], Self.same(kept, text) { return kept }
        strings[slot] = text
        return text
    }

    /// `values`, or a kept array of the same values; its strings shared
    /// when it is kept anew. Arrays holding arrays, objects or long text
    /// are left as they are.
    func values(_ values: [JSONValue]) -> [JSONValue] {
        guard !values.isEmpty else { return values }
        var hash = Self.seed
        for value in values {
            switch value {
            case .null: Self.mix(&hash, 1)
            case .bool(let bool): Self.mix(&hash, bool ? 2 : 3)
            case .int(let int): Self.mix(&hash, 4 ^ UInt64(bitPattern: int) << 3)
            case .double(let double): Self.mix(&hash, 5 ^ double.bitPattern << 3)
            case .string(let text):
                guard text.utf8.count <= Self.longestString else { return values }
                hash = Self.hash(text, into: hash)
            case .array, .object: return values
            }
        }
        let slot = Self.slot(hash)
        if let kept = rows[slot], Self.same(kept, values) { return kept }
        var made = values
        for index in made.indices {
            if case .string(let text) = made[index] { made[index] = .string(string(text)) }
        }
        rows[slot] = made
        return made
    }

    // MARK: - Hashing and comparing

    private static let seed: UInt64 = 0xcbf2_9ce4_8422_2325

    private static func slot(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: (hash &* 0x9e37_79b9_7f4a_7c15) >> 52) & (slotCount - 1)
    }

    private static func mix(_ hash: inout UInt64, _ word: UInt64) {
        hash = (hash ^ word) &* 0x100_0000_01b3
        hash ^= hash >> 29
    }

    /// FNV-1a over the bytes.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>, into hash: UInt64) -> UInt64 {
        var hash = hash
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    private static func hash(_ text: String, into hash: UInt64) -> UInt64 {
        if let hashed = text.utf8.withContiguousStorageIfAvailable({ Self.hash($0, into: hash) }) { return hashed }
        var hash = hash
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    private static func same(_ kept: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if let equal = kept.utf8.withContiguousStorageIfAvailable({ $0.elementsEqual(bytes) }) { return equal }
        return kept.utf8.elementsEqual(bytes)
    }

    private static func same(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        if let equal = b.utf8.withContiguousStorageIfAvailable({ same(a, $0) }) { return equal }
        return a.utf8.elementsEqual(b.utf8)
    }

    private static func same(_ a: [JSONValue], _ b: [JSONValue]) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.indices {
            switch (a[index], b[index]) {
            case (.null, .null): continue
            case (.bool(let x), .bool(let y)) where x == y: continue
            case (.int(let x), .int(let y)) where x == y: continue
            case (.double(let x), .double(let y)) where x.bitPattern == y.bitPattern: continue
            case (.string(let x), .string(let y)) where same(x, y): continue
            default: return false
            }
        }
        return true
    }
}
