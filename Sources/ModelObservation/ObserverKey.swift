
extension Dictionary where Value == ObserverSnapshot {
    /// Reads (or changes) the observer at `position` where it is stored:
    /// `values[position].field` copies the whole snapshot first.
    @inline(__always)
    mutating func inPlace<T>(at position: Index, _ body: (inout ObserverSnapshot) -> T) -> T {
        body(&values[position])
    }
}

/// An observer's id as the registry's tables key it: with its hash worked
/// out once. A poll or a wake-up looks its observer up in several tables,
/// and a key's set of readers can be large: each lookup then hashes one
/// integer, and a probe that meets another id compares hashes before ids.
struct ObserverKey: Hashable, Sendable {
    let id: String
    private let hash: Int

    init(_ id: String) {
        self.id = id
        hash = id.utf8.withContiguousStorageIfAvailable { Self.hash($0) } ?? Array(id.utf8).withUnsafeBufferPointer { Self.hash($0) }
    }

    /// A key for each process, so that the tables' layout differs from run
    /// to run as `Hasher`'s does.
    private static let seed = UInt64.random(in: .min ... .max)

    /// The id's bytes mixed eight at a time, with `seed`: an id is
    /// made by the server (random but for its time), so a client cannot
    /// choose ids that collide in a table; SipHash (`String.hashValue`)
    /// cost several times as much for each request naming an observer.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let raw = UnsafeRawBufferPointer(bytes)
        var h = seed ^ (UInt64(raw.count) &* 0x9E37_79B9_7F4A_7C15)
        var offset = 0
        while offset + 8 <= raw.count {
            h = mix(h ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        if offset < raw.count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while offset < raw.count {
                tail |= UInt64(raw[offset]) << shift
                shift += 8
                offset += 1
            }
            h = mix(h ^ tail)
        }
        return Int(truncatingIfNeeded: mix(h))
    }

    /// SplitMix64's finalizer: each bit of the result depends on each of `x`.
    @inline(__always)
    private static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func == (a: ObserverKey, b: ObserverKey) -> Bool {
        a.hash == b.hash && a.id == b.id
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    /// The id's hash, already seeded per process, mixed with the table's
    /// seed (see `PropertyKey._rawHashValue`).
    func _rawHashValue(seed: Int) -> Int {
        hash ^ seed
    }
}

extension Array {
    /// Whether both are the same storage (and so the same elements): for
    /// arrays held apart from each other, a comparison that costs nothing.
    func isSameArray(as other: [Element]) -> Bool {
        guard !isEmpty, count == other.count else { return false }
        return withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }
}
