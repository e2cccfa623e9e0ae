/// One observable property, named by its path in the API:
/// `/truck/name`, `/truck/donuts/{id}/name`, `/truck/orderCount`. A
/// collection's membership is keyed by the collection's path (`/truck/donuts`).
///
/// The path's hash is computed once, when the key is made: a key is looked up
/// many times (the observer's reads, the reverse index, every change), and
/// a model keeps the keys of its elements.
public struct PropertyKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let path: String
    private let pathHash: Int

    public init(_ path: String) {
        self.path = path
        pathHash = path.hashValue
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
        paths.split(separator: "\n").map { PropertyKey(String($0)) }
    }
}
