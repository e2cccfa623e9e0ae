@testable import ModelStore
import Testing

/// A key whose hash only has seven values, so that most keys share a hash
/// with others and the chains of equal hashes are exercised.
struct CollidingKey: Hashable, Sendable {
    let number: Int
    func hash(into hasher: inout Hasher) { hasher.combine(number % 7) }
}

@Suite struct PersistentOrderedDictionaryTests {
    /// Random inserts, updates, removals and lookups, compared with a plain
    /// dictionary plus an array of keys in insertion order; copies taken
    /// along the way must keep what they saw.
    func randomEdits<Key: Hashable & Sendable>(keys keyCount: Int, steps: Int, key makeKey: (Int) -> Key) {
        var subject = PersistentOrderedDictionary<Key, Int>()
        var keys: [Key] = []
        var values: [Key: Int] = [:]
        var snapshots: [(PersistentOrderedDictionary<Key, Int>, [Key], [Key: Int])] = []
        var state: UInt64 = 42
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        for step in 0..<steps {
            let key = makeKey(next(keyCount))
            switch next(4) {
            case 0, 1:
                if values[key] == nil { keys.append(key) }
                values[key] = step
                subject[key] = step
            case 2:
                if values.removeValue(forKey: key) != nil { keys.removeAll { $0 == key } }
                subject[key] = nil
            default:
                #expect(subject[key] == values[key])
            }
            #expect(subject.count == values.count)
            if step % (steps / 10) == 0 { snapshots.append((subject, keys, values)) }
        }
        #expect(subject.keys == keys)
        #expect(subject.values == keys.map { values[$0]! })
        for key in (0..<keyCount).map(makeKey) { #expect(subject[key] == values[key]) }
        // Copies taken earlier never saw the later edits.
        for (copy, keys, values) in snapshots {
            #expect(copy.keys == keys)
            #expect(copy.values == keys.map { values[$0]! })
            #expect(copy.count == values.count)
        }
    }

    @Test func behavesLikeAnInsertionOrderedDictionaryUnderRandomEdits() {
        randomEdits(keys: 3000, steps: 20_000) { "k\($0)" }
    }

    @Test func keysThatShareAHashStayApart() {
        randomEdits(keys: 200, steps: 20_000) { CollidingKey(number: $0) }
    }
}

@Suite struct PersistentOrderedDictionaryLoadingTests {
    /// Elements appended unindexed, then indexed at once, answer as if each
    /// had been set by the subscript, and take further edits alike.
    func loaded<Key: Hashable & Sendable>(_ keys: [Key], more: [Key]) {
        var loaded = PersistentOrderedDictionary<Key, Int>()
        var expected = PersistentOrderedDictionary<Key, Int>()
        for (value, key) in keys.enumerated() {
            loaded.appendUnindexed(key, value)
            expected[key] = value
        }
        loaded.makeIndex()
        #expect(loaded == expected)
        #expect(loaded.count == expected.count)
        for key in keys { #expect(loaded[key] == expected[key]) }
        for (value, key) in more.enumerated() {
            loaded[key] = value
            expected[key] = value
            if value % 3 == 0 { loaded[keys[value % keys.count]] = nil; expected[keys[value % keys.count]] = nil }
        }
        #expect(loaded == expected)
        for key in keys + more { #expect(loaded[key] == expected[key]) }
    }

    @Test func indexedAtOnceAnswersAsIndexedOneByOne() {
        loaded((0..<5000).map { "k\($0)" }, more: (4000..<6000).map { "k\($0)" })
    }

    @Test func keysThatShareAHashAreChainedWhenIndexedAtOnce() {
        loaded((0..<300).map { CollidingKey(number: $0) }, more: (250..<400).map { CollidingKey(number: $0) })
    }

    @Test func aKeyAppendedTwiceKeepsItsFirstPlaceAndLastValue() {
        loaded((0..<500).map { "k\($0 % 400)" }, more: [])
        loaded((0..<40).map { CollidingKey(number: $0 % 30) }, more: [])
    }
}
