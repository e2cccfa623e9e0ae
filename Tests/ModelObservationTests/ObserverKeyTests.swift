import Testing
@testable import ModelObservation

/// An observer's id is hashed once, by the registry's own mix of its bytes:
/// it must spread the server's ids (alike but for a few characters) over a
/// table as well as `Hasher` would, and tell apart ids that differ anywhere.
@Suite struct ObserverKeyTests {
    /// Ids as the server makes them: the time in the first characters, the
    /// rest random; here a counter stands in for both.
    static func id(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        let counter = String(repeating: "0", count: 12 - hex.count) + hex
        return "019a\(counter.prefix(4))-\(counter.suffix(8).prefix(4))-7abc-8def-0000\(counter.suffix(8))"
    }

    static func hash(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { ObserverKey.hash($0) }
    }

    @Test func idsThatDifferAnywhereHashApartAndTheSameIdTheSame() {
        let base = Self.id(12345)
        #expect(ObserverKey(base).hashValue == ObserverKey(String(base)).hashValue)
        var bytes = Array(base.utf8)
        for position in bytes.indices {
            let original = bytes[position]
            bytes[position] = original == UInt8(ascii: "f") ? UInt8(ascii: "e") : UInt8(ascii: "f")
            #expect(ObserverKey(String(decoding: bytes, as: UTF8.self)) != ObserverKey(base))
            #expect(Self.hash(bytes) != Self.hash(Array(base.utf8)), "a change at \(position) left the hash alone")
            bytes[position] = original
        }
        // A longer id with the same start, and an empty one.
        #expect(ObserverKey(base + "0").hashValue != ObserverKey(base).hashValue)
        #expect(ObserverKey("") == ObserverKey(""))
    }

    @Test func serverIdsSpreadEvenlyOverATable() {
        let count = 1 << 16
        var buckets = [Int](repeating: 0, count: count)
        for n in 0..<count {
            var id = Self.id(n)
            let hash = id.withUTF8 { ObserverKey.hash($0) }
            buckets[hash & (count - 1)] += 1
        }
        // Thrown at random, 65,536 into 65,536 buckets leave about 37 % of
        // them empty and none holding more than a handful.
        let empty = buckets.filter { $0 == 0 }.count
        #expect((count * 34 / 100)...(count * 40 / 100) ~= empty)
        #expect(buckets.max()! <= 10)
    }
}
