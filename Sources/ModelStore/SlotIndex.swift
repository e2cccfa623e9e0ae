/// A persistent map from a 32-bit hash to a slot number: the key index of
/// `PersistentOrderedDictionary`.
///
/// A trie on the hash's bits, 5 at a level, whose leaves are short arrays
/// of packed entries (hash and slot in one word): 8 bytes and a share of a
/// leaf per element, where a `TreeDictionary<Int, Int>` cost about 60. Copies
/// share nodes; a write copies the nodes on its path, a leaf of at most
/// `leafCapacity` words among them.
struct SlotIndex: Sendable {
    final class Node: @unchecked Sendable {
        // Mutated only after a uniqueness check or a copy, so a node
        // another copy can see never changes.
        /// 32 children by the next 5 bits of the hash; empty for a leaf.
        var children: [Node]
        /// A leaf's entries, `hash << 32 | slot`, unordered.
        var entries: [UInt64]

        init(children: [Node] = [], entries: [UInt64] = []) {
            self.children = children
            self.entries = entries
        }
    }

    static let leafCapacity = 64
    static let bitsPerLevel = 5
    static var fanout: Int { 1 << bitsPerLevel }

    private var root: Node?

    init() {}

    /// The index of `entries` (`hash << 32 | slot`), sorted with no hash
    /// twice, made leaf by leaf.
    init(sorted entries: [UInt64]) {
        root = entries.isEmpty ? nil : Self.node(entries[...], shift: 32)
    }

    private static func node(_ entries: ArraySlice<UInt64>, shift: Int) -> Node {
        guard entries.count > leafCapacity, shift >= bitsPerLevel else { return Node(entries: Array(entries)) }
        let next = shift - bitsPerLevel
        var children: [Node] = []
        children.reserveCapacity(fanout)
        var start = entries.startIndex
        for part in 0..<fanout {
            var end = start
            while end < entries.endIndex, Int(truncatingIfNeeded: entries[end] >> UInt64(32 + next)) & (fanout - 1) == part { end += 1 }
            children.append(node(entries[start..<end], shift: next))
            start = end
        }
        return Node(children: children)
    }

    /// The slot kept for `hash`.
    func slot(for hash: UInt32) -> Int? {
        guard var node = root else { return nil }
        var shift = 32
        while !node.children.isEmpty {
            shift -= Self.bitsPerLevel
            node = node.children[Int(truncatingIfNeeded: hash >> UInt32(shift)) & (Self.fanout - 1)]
        }
        for entry in node.entries where UInt32(truncatingIfNeeded: entry >> 32) == hash {
            return Int(truncatingIfNeeded: entry & 0xffff_ffff)
        }
        return nil
    }

    /// Keeps `slot` for `hash` (nil forgets it).
    mutating func set(_ hash: UInt32, _ slot: Int?) {
        precondition(slot.map { $0 >= 0 && $0 <= Int(UInt32.max) } ?? true, "slot out of range")
        if root == nil {
            guard slot != nil else { return }
            root = Node()
        }
        Self.set(&root!, hash, slot.map { UInt64(hash) << 32 | UInt64($0) }, shift: 32)
    }

    private static func set(_ node: inout Node, _ hash: UInt32, _ entry: UInt64?, shift: Int) {
        if !isKnownUniquelyReferenced(&node) {
            node = Node(children: node.children, entries: node.entries)
        }
        if !node.children.isEmpty {
            let next = shift - bitsPerLevel
            set(&node.children[Int(truncatingIfNeeded: hash >> UInt32(next)) & (fanout - 1)], hash, entry, shift: next)
            return
        }
        if let index = node.entries.firstIndex(where: { UInt32(truncatingIfNeeded: $0 >> 32) == hash }) {
            if let entry {
                node.entries[index] = entry
            } else {
                node.entries.swapAt(index, node.entries.count - 1)
                node.entries.removeLast()
            }
            return
        }
        guard let entry else { return }
        node.entries.append(entry)
        // A full leaf becomes a branch, while hash bits remain to tell its
        // entries apart.
        if node.entries.count > leafCapacity, shift >= bitsPerLevel {
            let next = shift - bitsPerLevel
            var parts = [[UInt64]](repeating: [], count: fanout)
            for entry in node.entries {
                parts[Int(truncatingIfNeeded: entry >> UInt64(32 + next)) & (fanout - 1)].append(entry)
            }
            node.children = parts.map { Node(entries: $0) }
            node.entries = []
        }
    }
}
