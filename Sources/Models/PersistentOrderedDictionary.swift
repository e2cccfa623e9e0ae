import HashTreeCollections

/// An insertion-ordered dictionary whose copies share storage, so that
/// changing a copy costs O(log n + chunk) instead of O(n).
///
/// The model state is a value that reads copy and writes change: with a plain
/// ordered dictionary every write to a large collection (a new order) copied
/// the whole collection, because the published state still shared it. Here
/// elements live in fixed-size chunks addressed by their insertion number;
/// a write copies the chunk it touches and the chunk list, and the key index
/// is a persistent hash trie.
public struct PersistentOrderedDictionary<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    static var chunkSize: Int { 256 }

    /// A fixed-size run of slots; shared between copies until one writes.
    final class Chunk: @unchecked Sendable {
        // Mutated only through `uniqueChunk`, after a uniqueness check or a
        // copy, so a chunk another copy can see never changes.
        var slots: [(key: Key, value: Value)?]
        var live: Int

        init() {
            slots = Array(repeating: nil, count: PersistentOrderedDictionary.chunkSize)
            live = 0
        }

        init(copying other: Chunk) {
            slots = other.slots
            live = other.live
        }
    }

    private var index = TreeDictionary<Key, Int>()
    private var chunks: [Chunk] = []
    private var nextSlot = 0

    public init() {}

    public var count: Int { index.count }
    public var isEmpty: Bool { index.isEmpty }

    public subscript(key: Key) -> Value? {
        get {
            guard let slot = index[key] else { return nil }
            return chunks[slot / Self.chunkSize].slots[slot % Self.chunkSize]?.value
        }
        set {
            if let newValue {
                if let slot = index[key] {
                    uniqueChunk(slot / Self.chunkSize).slots[slot % Self.chunkSize] = (key, newValue)
                } else {
                    let slot = nextSlot
                    nextSlot += 1
                    if slot / Self.chunkSize == chunks.count { chunks.append(Chunk()) }
                    let chunk = uniqueChunk(slot / Self.chunkSize)
                    chunk.slots[slot % Self.chunkSize] = (key, newValue)
                    chunk.live += 1
                    index[key] = slot
                }
            } else if let slot = index.removeValue(forKey: key) {
                let chunk = uniqueChunk(slot / Self.chunkSize)
                chunk.slots[slot % Self.chunkSize] = nil
                chunk.live -= 1
            }
        }
    }

    private mutating func uniqueChunk(_ number: Int) -> Chunk {
        if !isKnownUniquelyReferenced(&chunks[number]) {
            chunks[number] = Chunk(copying: chunks[number])
        }
        return chunks[number]
    }

    /// The values in insertion order.
    public var values: [Value] {
        var result: [Value] = []
        result.reserveCapacity(count)
        for chunk in chunks where chunk.live > 0 {
            for case let entry? in chunk.slots { result.append(entry.value) }
        }
        return result
    }

    /// The keys in insertion order.
    public var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(count)
        for chunk in chunks where chunk.live > 0 {
            for case let entry? in chunk.slots { result.append(entry.key) }
        }
        return result
    }
}

extension PersistentOrderedDictionary: Equatable where Value: Equatable {
    public static func == (a: Self, b: Self) -> Bool {
        a.count == b.count && a.keys == b.keys && a.values == b.values
    }
}
