import HashTreeCollections

/// An insertion-ordered dictionary whose copies share storage, so that
/// changing a copy costs O(log n + chunk) instead of O(n).
///
/// The model state is a value that reads copy and writes change: with a plain
/// ordered dictionary every write to a large collection (a new order) copied
/// the whole collection, because the published state still shared it. Here
/// elements live in small fixed-size chunks addressed by their insertion
/// number; a write copies the chunk it touches and the paths to it in two
/// persistent hash tries, so it costs the same with a hundred elements or a
/// million:
/// - the chunk index maps a chunk's number to the chunk;
/// - the key index maps a key's hash to the slot of the newest element with
///   that hash. Its entries are two integers, so copying a trie node copies
///   plain memory (no reference counting, unlike string keys). Elements whose
///   keys share a hash are chained through their slots.
public struct PersistentOrderedDictionary<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    static var chunkSize: Int { 16 }

    struct Entry {
        var key: Key
        var value: Value
        /// The slot of the next older element whose key has the same hash, or -1.
        var sameHash: Int
    }

    /// A fixed-size run of slots; shared between copies until one writes.
    final class Chunk: @unchecked Sendable {
        // Mutated only through `uniqueChunk`, after a uniqueness check or a
        // copy, so a chunk another copy can see never changes.
        var slots: [Entry?]
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

    /// Key hash → slot of the newest element with that hash.
    private var index = TreeDictionary<Int, Int>()
    /// Chunk number → chunk. Not an array: a write to a shared array copies
    /// it whole, and that grew with the collection.
    private var chunks = TreeDictionary<Int, Chunk>()
    private var chunkCount = 0
    private var nextSlot = 0
    public private(set) var count = 0

    public init() {}

    public var isEmpty: Bool { count == 0 }

    private func entry(at slot: Int) -> Entry? {
        chunks[slot / Self.chunkSize]?.slots[slot % Self.chunkSize]
    }

    /// The slot holding `key`, if any, and the newest slot with its hash
    /// (-1 for none), where a new element with that hash is chained.
    private func find(_ key: Key, hash: Int) -> (slot: Int?, newest: Int) {
        let newest = index[hash] ?? -1
        var candidate = newest
        while candidate >= 0, let entry = entry(at: candidate) {
            if entry.key == key { return (candidate, newest) }
            candidate = entry.sameHash
        }
        return (nil, newest)
    }

    /// Whether `key` has a value, without copying the value out.
    public func contains(_ key: Key) -> Bool {
        find(key, hash: key.hashValue).slot != nil
    }

    public subscript(key: Key) -> Value? {
        get {
            find(key, hash: key.hashValue).slot.flatMap { entry(at: $0)?.value }
        }
        set {
            let hash = key.hashValue
            let found = find(key, hash: hash)
            if let newValue {
                if let slot = found.slot {
                    uniqueChunk(slot / Self.chunkSize).slots[slot % Self.chunkSize]!.value = newValue
                } else {
                    insert(key, newValue, hash: hash, after: found.newest)
                }
            } else if let slot = found.slot {
                remove(slot, hash: hash)
            }
        }
    }

    private mutating func insert(_ key: Key, _ value: Value, hash: Int, after newest: Int) {
        let slot = nextSlot
        nextSlot += 1
        if slot / Self.chunkSize == chunkCount {
            chunks[chunkCount] = Chunk()
            chunkCount += 1
        }
        let chunk = uniqueChunk(slot / Self.chunkSize)
        chunk.slots[slot % Self.chunkSize] = Entry(key: key, value: value, sameHash: newest)
        chunk.live += 1
        index[hash] = slot
        count += 1
    }

    private mutating func remove(_ slot: Int, hash: Int) {
        let chunk = uniqueChunk(slot / Self.chunkSize)
        let next = chunk.slots[slot % Self.chunkSize]!.sameHash
        chunk.slots[slot % Self.chunkSize] = nil
        chunk.live -= 1
        count -= 1
        if index[hash] == slot {
            index[hash] = next >= 0 ? next : nil
            return
        }
        // Unlink it from the chain of elements with the same hash.
        var previous = index[hash] ?? -1
        while previous >= 0, let entry = entry(at: previous) {
            if entry.sameHash == slot {
                uniqueChunk(previous / Self.chunkSize).slots[previous % Self.chunkSize]!.sameHash = next
                return
            }
            previous = entry.sameHash
        }
    }

    private mutating func uniqueChunk(_ number: Int) -> Chunk {
        // The trie's `_modify` moves the value out while it is checked, so a
        // chunk only this copy holds is not copied again.
        if !isKnownUniquelyReferenced(&chunks[number]) {
            chunks[number] = Chunk(copying: chunks[number]!)
        }
        return chunks[number]!
    }

    /// The chunks in insertion order.
    private var orderedChunks: some Sequence<Chunk> {
        (0..<chunkCount).lazy.compactMap { chunks[$0] }.filter { $0.live > 0 }
    }

    /// The newest value: found from the end, without a pass over the rest.
    public var last: Value? {
        var number = chunkCount - 1
        while number >= 0 {
            if let chunk = chunks[number], chunk.live > 0, let entry = chunk.slots.last(where: { $0 != nil }) {
                return entry?.value
            }
            number -= 1
        }
        return nil
    }

    /// The values in insertion order.
    public var values: [Value] {
        var result: [Value] = []
        result.reserveCapacity(count)
        for chunk in orderedChunks {
            for case let entry? in chunk.slots { result.append(entry.value) }
        }
        return result
    }

    /// The keys in insertion order.
    public var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(count)
        for chunk in orderedChunks {
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

extension PersistentOrderedDictionary {
    /// Calls `body` with the values in insertion order, forward or
    /// backward, until it returns false. With `boundary` (false, then true
    /// along the order: "past a position"), forward starts at the first
    /// value for which it holds, backward at the last for which it does
    /// not. The start is found by a binary search over the slots, so a
    /// page from the middle of a million elements costs a few lookups.
    public func forEach(forward: Bool = true, from boundary: ((Value) -> Bool)? = nil, _ body: (Value) -> Bool) {
        var start = forward ? 0 : nextSlot
        if let boundary { start = firstSlot(where: boundary) }
        if forward {
            var slot = start
            while slot < nextSlot {
                guard let chunk = chunks[slot / Self.chunkSize], chunk.live > 0 else {
                    slot = (slot / Self.chunkSize + 1) * Self.chunkSize
                    continue
                }
                if let entry = chunk.slots[slot % Self.chunkSize], !body(entry.value) { return }
                slot += 1
            }
        } else {
            var slot = start - 1
            while slot >= 0 {
                guard let chunk = chunks[slot / Self.chunkSize], chunk.live > 0 else {
                    slot = (slot / Self.chunkSize) * Self.chunkSize - 1
                    continue
                }
                if let entry = chunk.slots[slot % Self.chunkSize], !body(entry.value) { return }
                slot -= 1
            }
        }
    }

    /// The first slot whose value, or the next value after it, `boundary`
    /// holds for (`nextSlot` when none).
    private func firstSlot(where boundary: (Value) -> Bool) -> Int {
        var low = 0, high = nextSlot
        while low < high {
            let middle = (low + high) / 2
            // The first value at or after `middle`, below `high`.
            var probe = middle
            var found: Value?
            while probe < high {
                guard let chunk = chunks[probe / Self.chunkSize], chunk.live > 0 else {
                    probe = (probe / Self.chunkSize + 1) * Self.chunkSize
                    continue
                }
                if let entry = chunk.slots[probe % Self.chunkSize] {
                    found = entry.value
                    break
                }
                probe += 1
            }
            if let found, !boundary(found) {
                low = probe + 1
            } else {
                high = middle
            }
        }
        return low
    }
}
