/// One observable property, named by its path in the API:
/// `/truck/name`, `/truck/donuts/{id}/name`, `/truck/orderCount`. A
/// collection's membership is keyed by the collection's path (`/truck/donuts`).
///
/// The path's hash is computed once, when the key is made: a key is looked up
/// many times (the observer's reads, the reverse index, every change), and
/// a model keeps the keys of its elements.
public struct PropertyKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let path: String
    /// The path's hash, its two top bits replaced by what the key names
    /// (`Kind`): asked for every key of every change and read, and found
    /// here without looking through the path again.
    private let pathHash: Int

    public init(_ path: String) {
        self.path = path
        pathHash = (path.hashValue & ~(3 << 62)) | (Self.kind(of: path).rawValue << 62)
    }

    /// What a key names: a property (or a collection's membership), a
    /// shape (`Shape.key`, with `?`) or a place (`Place.key`, with `#`).
    enum Kind: Int {
        case property = 0
        case shape = 1
        case place = 2
        /// What query shapes look at of an element a change lands on
        /// (`ElementRow.key`, starting with `@`).
        case row = 3
    }

    var kind: Kind { Kind(rawValue: Int(UInt(bitPattern: pathHash) >> 62)) ?? .property }

    private static func kind(of path: String) -> Kind {
        if path.utf8.first == UInt8(ascii: "@") { return .row }
        func kind<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Kind {
            for byte in bytes {
                if byte == UInt8(ascii: "?") { return .shape }
                if byte == UInt8(ascii: "#") { return .place }
            }
            return .property
        }
        return path.utf8.withContiguousStorageIfAvailable { kind($0) } ?? kind(path.utf8)
    }

    /// The key of property `name` of the resource at `resource`.
    public init(_ resource: String, _ name: String) {
        self.init(resource + "/" + name)
    }

    public var description: String { path }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(pathHash)
    }

    /// What a `Set` or `Dictionary` hashes: the path's hash, already
    /// seeded per process, mixed with the table's seed, without hashing it
    /// again (a key is looked up tens of times for each read and change).
    public func _rawHashValue(seed: Int) -> Int {
        pathHash ^ seed
    }

    public static func == (a: PropertyKey, b: PropertyKey) -> Bool {
        a.pathHash == b.pathHash && a.path == b.path
    }

    public static func < (a: PropertyKey, b: PropertyKey) -> Bool { a.path < b.path }
}

extension PropertyKey {
    /// The keys of paths stored joined by newlines (how the change log,
    /// the sets of keys read and the read journal keep them); none for "".
    public static func keys(joined paths: String) -> [PropertyKey] {
        // Split on the bytes: a split by characters (grapheme clusters) cost
        // a restart more than reading the tables (a game's insert names
        // 156 keys, and the log keeps 100,000 changes).
        var paths = paths
        return paths.withUTF8 { bytes in
            var keys: [PropertyKey] = []
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "\n") {
                if index > start {
                    keys.append(PropertyKey(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)))
                }
                start = index + 1
            }
            return keys
        }
    }
}
