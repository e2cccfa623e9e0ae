@testable import Models
import Testing

@Suite struct PersistentOrderedDictionaryTests {
    @Test func behavesLikeAnInsertionOrderedDictionaryUnderRandomEdits() {
        var subject = PersistentOrderedDictionary<String, Int>()
        var keys: [String] = []
        var values: [String: Int] = [:]
        var snapshots: [(PersistentOrderedDictionary<String, Int>, [String], [String: Int])] = []
        var state: UInt64 = 42
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        for step in 0..<20_000 {
            let key = "k\(next(3000))"
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
            if step % 2000 == 0 { snapshots.append((subject, keys, values)) }
        }
        #expect(subject.count == values.count)
        #expect(subject.keys == keys)
        #expect(subject.values == keys.map { values[$0]! })
        // Copies taken earlier never saw the later edits.
        for (copy, keys, values) in snapshots {
            #expect(copy.keys == keys)
            #expect(copy.values == keys.map { values[$0]! })
        }
    }
}
