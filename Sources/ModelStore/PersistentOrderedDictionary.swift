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
/// - the key index maps 32 bits of a key's hash to the slot of the newest
///   element with that hash (`SlotIndex`). Its entries are one word each,
///   so copying a leaf copies plain memory (no reference counting, unlike
///   string keys). Elements whose keys share those bits are chained through
///   their slots.
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
    private var index = SlotIndex()
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
    private func find(_ key: Key, hash: UInt32) -> (slot: Int?, newest: Int) {
        let newest = index.slot(for: hash) ?? -1
        var candidate = newest
        while candidate >= 0, let entry = entry(at: candidate) {
            if entry.key == key { return (candidate, newest) }
            candidate = entry.sameHash
        }
        return (nil, newest)
    }

    /// Whether `key` has a value, without copying the value out.
    public func contains(_ key: Key) -> Bool {
        find(key, hash: Self.hash(key)).slot != nil
    }

    public subscript(key: Key) -> Value? {
        get {
            find(key, hash: Self.hash(key)).slot.flatMap { entry(at: $0)?.value }
        }
        set {
            let hash = Self.hash(key)
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

    private static func hash(_ key: Key) -> UInt32 {
        UInt32(truncatingIfNeeded: key.hashValue)
    }

    private mutating func insert(_ key: Key, _ value: Value, hash: UInt32, after newest: Int) {
        let slot = nextSlot
        nextSlot += 1
        if slot / Self.chunkSize == chunkCount {
            chunks[chunkCount] = Chunk()
            chunkCount += 1
        }
        let chunk = uniqueChunk(slot / Self.chunkSize)
        chunk.slots[slot % Self.chunkSize] = Entry(key: key, value: value, sameHash: newest)
        chunk.live += 1
        index.set(hash, slot)
        count += 1
    }

    // MARK: Loading many elements at once

    /// Adds `value` under `key` at the end without updating the key index,
    /// for loading many elements: lookups are wrong until `makeIndex()`,
    /// which must follow before any other use.
    mutating func appendUnindexed(_ key: Key, _ value: Value) {
        let slot = nextSlot
        nextSlot += 1
        if slot / Self.chunkSize == chunkCount {
            chunks[chunkCount] = Chunk()
            chunkCount += 1
        }
        let chunk = uniqueChunk(slot / Self.chunkSize)
        chunk.slots[slot % Self.chunkSize] = Entry(key: key, value: value, sameHash: -1)
        chunk.live += 1
        count += 1
    }

    /// Makes the key index of every element in one pass, sorted by hash,
    /// instead of one walk down the index per element. A key added twice
    /// keeps its first place and its last value, as the subscript would.
    mutating func makeIndex() {
        var pairs: [UInt64] = []
        pairs.reserveCapacity(count)
        for number in 0..<chunkCount {
            guard let chunk = chunks[number] else { continue }
            for (offset, entry) in chunk.slots.enumerated() {
                guard let entry else { continue }
                pairs.append(UInt64(Self.hash(entry.key)) << 32 | UInt64(number * Self.chunkSize + offset))
            }
        }
        pairs.sort()
        // Elements whose hashes are equal are chained, newest first: the
        // newest goes to the index.
        var newest: [UInt64] = []
        newest.reserveCapacity(pairs.count)
        var start = 0
        while start < pairs.count {
            var end = start + 1
            while end < pairs.count, pairs[end] >> 32 == pairs[start] >> 32 { end += 1 }
            if end - start > 1 {
                for index in start + 1..<end {
                    let slot = Int(truncatingIfNeeded: pairs[index] & 0xffff_ffff)
                    let older = Int(truncatingIfNeeded: pairs[index - 1] & 0xffff_ffff)
                    let key = entry(at: slot)?.key
                    if (start..<index).contains(where: { entry(at: Int(truncatingIfNeeded: pairs[$0] & 0xffff_ffff))?.key == key }) {
                        return reinsertAll()
                    }
                    uniqueChunk(slot / Self.chunkSize).slots[slot % Self.chunkSize]!.sameHash = older
                }
            }
            newest.append(pairs[end - 1])
            start = end
        }
        index = SlotIndex(sorted: newest)
    }

    /// The elements inserted again one at a time: a key given twice.
    private mutating func reinsertAll() {
        var entries: [(Key, Value)] = []
        entries.reserveCapacity(count)
        for number in 0..<chunkCount {
            guard let chunk = chunks[number] else { continue }
            for case let entry? in chunk.slots { entries.append((entry.key, entry.value)) }
        }
        self = Self()
        for (key, value) in entries { self[key] = value }
    }

    private mutating func remove(_ slot: Int, hash: UInt32) {
        let chunk = uniqueChunk(slot / Self.chunkSize)
        let next = chunk.slots[slot % Self.chunkSize]!.sameHash
        chunk.slots[slot % Self.chunkSize] = nil
        chunk.live -= 1
        count -= 1
        let newest = index.slot(for: hash) ?? -1
        if newest == slot {
            index.set(hash, next >= 0 ? next : nil)
            return
        }
        // Unlink it from the chain of elements with the same hash.
        var previous = newest
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
        // chunk only this copy holds is not copied again; one walk down the
        // trie checks it, copies it if shared and hands it back.
        func unique(_ chunk: inout Chunk?) -> Chunk {
            if !isKnownUniquelyReferenced(&chunk) { chunk = Chunk(copying: chunk!) }
            return chunk!
        }
        return unique(&chunks[number])
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
