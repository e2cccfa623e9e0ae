/// A sorted set of pairs of integers whose copies share storage: a B-tree
/// whose nodes are copied only on the path a change goes down (a node
/// another copy still holds never changes), so a write to a state that a
/// read still holds costs O(log n), as `PersistentOrderedDictionary` does.
///
/// A query index keeps `(value's ordinal, position)` pairs in it: the
/// elements in the order of a field's values, ties by position.
struct PairSet: Sendable {
    struct Pair: Comparable, Sendable {
        var first: Int64
        var second: Int64

        static func < (a: Pair, b: Pair) -> Bool {
            a.first != b.first ? a.first < b.first : a.second < b.second
        }
    }

    /// A leaf holds pairs; an inner node its children and each one's
    /// smallest pair (`keys[i]` is `children[i]`'s least).
    final class Node: @unchecked Sendable {
        // Changed only after `isKnownUniquelyReferenced` or a copy.
        var keys: [Pair]
        var children: [Node]

        init(keys: [Pair], children: [Node] = []) {
            self.keys = keys
            self.children = children
        }

        var isLeaf: Bool { children.isEmpty }
        func copy() -> Node { Node(keys: keys, children: children) }
    }

    static let capacity = 64

    private var root = Node(keys: [])
    private(set) var count = 0

    init() {}

    /// The set of `pairs`, sorted and distinct, built bottom-up with full nodes.
    init(sorted pairs: [Pair]) {
        count = pairs.count
        guard !pairs.isEmpty else { return }
        var level: [Node] = stride(from: 0, to: pairs.count, by: Self.capacity).map {
            Node(keys: Array(pairs[$0..<min($0 + Self.capacity, pairs.count)]))
        }
        while level.count > 1 {
            level = stride(from: 0, to: level.count, by: Self.capacity).map { start in
                let children = Array(level[start..<min(start + Self.capacity, level.count)])
                return Node(keys: children.map { $0.keys[0] }, children: children)
            }
        }
        root = level[0]
    }

    /// The first index whose key is not below `pair` (`orEqual`: above it).
    private static func bound(_ keys: [Pair], _ pair: Pair, above orEqual: Bool) -> Int {
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < pair || (orEqual && keys[middle] == pair) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The child of `node` that holds `pair`, or would.
    private static func child(of node: Node, for pair: Pair) -> Int {
        max(0, bound(node.keys, pair, above: true) - 1)
    }

    mutating func insert(_ pair: Pair) {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        var added = false
        if let right = Self.insert(pair, into: root, added: &added) {
            root = Node(keys: [root.keys[0], right.keys[0]], children: [root, right])
        }
        if added { count += 1 }
    }

    /// Inserts into `node` (uniquely held); answers the node split off its right, if any.
    private static func insert(_ pair: Pair, into node: Node, added: inout Bool) -> Node? {
        var atEnd = false
        if node.isLeaf {
            let index = bound(node.keys, pair, above: false)
            guard index == node.keys.count || node.keys[index] != pair else { return nil }
            node.keys.insert(pair, at: index)
            added = true
            atEnd = index == node.keys.count - 1
        } else {
            let index = child(of: node, for: pair)
            if !isKnownUniquelyReferenced(&node.children[index]) { node.children[index] = node.children[index].copy() }
            if let right = insert(pair, into: node.children[index], added: &added) {
                node.children.insert(right, at: index + 1)
                node.keys.insert(right.keys[0], at: index + 1)
                atEnd = index + 1 == node.children.count - 1
            }
            node.keys[index] = node.children[index].keys[0]
        }
        guard node.keys.count > capacity else { return nil }
        // Appended at the end (positions only grow): the left part stays full.
        let split = atEnd ? node.keys.count - 1 : node.keys.count / 2
        let right = Node(keys: Array(node.keys[split...]), children: node.isLeaf ? [] : Array(node.children[split...]))
        node.keys.removeSubrange(split...)
        if !node.isLeaf { node.children.removeSubrange(split...) }
        return right
    }

    mutating func remove(_ pair: Pair) {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        if Self.remove(pair, from: root) { count -= 1 }
        while !root.isLeaf && root.children.count == 1 { root = root.children[0] }
        if !root.isLeaf && root.children.isEmpty { root = Node(keys: []) }
    }

    private static func remove(_ pair: Pair, from node: Node) -> Bool {
        if node.isLeaf {
            let index = bound(node.keys, pair, above: false)
            guard index < node.keys.count, node.keys[index] == pair else { return false }
            node.keys.remove(at: index)
            return true
        }
        let index = child(of: node, for: pair)
        guard index < node.children.count else { return false }
        if !isKnownUniquelyReferenced(&node.children[index]) { node.children[index] = node.children[index].copy() }
        let removed = remove(pair, from: node.children[index])
        if node.children[index].keys.isEmpty {
            node.children.remove(at: index)
            node.keys.remove(at: index)
        } else {
            node.keys[index] = node.children[index].keys[0]
        }
        return removed
    }

    /// Calls `body` with the pairs from `start` on (all when nil) in
    /// ascending order, or from `start` down (through it) in descending
    /// order, until it returns false.
    func forEach(from start: Pair? = nil, ascending: Bool = true, _ body: (Pair) -> Bool) {
        _ = ascending ? Self.walk(root, from: start, body) : Self.walkBack(root, through: start, body)
    }

    private static func walk(_ node: Node, from start: Pair?, _ body: (Pair) -> Bool) -> Bool {
        if node.isLeaf {
            for pair in node.keys[(start.map { bound(node.keys, $0, above: false) } ?? 0)...] where !body(pair) { return false }
            return true
        }
        for child in node.children[(start.map { child(of: node, for: $0) } ?? 0)...] where !walk(child, from: start, body) { return false }
        return true
    }

    private static func walkBack(_ node: Node, through end: Pair?, _ body: (Pair) -> Bool) -> Bool {
        if node.isLeaf {
            for pair in node.keys[..<(end.map { bound(node.keys, $0, above: true) } ?? node.keys.count)].reversed() where !body(pair) {
                return false
            }
            return true
        }
        let last = end.map { bound(node.keys, $0, above: true) - 1 } ?? node.children.count - 1
        guard last >= 0 else { return true }
        for child in node.children[...last].reversed() where !walkBack(child, through: end, body) { return false }
        return true
    }
}
