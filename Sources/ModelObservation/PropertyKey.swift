/// One observable property, named by its path in the API:
/// `/truck/name`, `/truck/donuts/{id}/name`, `/truck/orderCount`. A
/// collection's membership is keyed by the collection's path (`/truck/donuts`).
public struct PropertyKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let path: String

    public init(_ path: String) {
        self.path = path
    }

    /// The key of property `name` of the resource at `resource`.
    public init(_ resource: String, _ name: String) {
        self.path = resource + "/" + name
    }

    public var description: String { path }

    public static func < (a: PropertyKey, b: PropertyKey) -> Bool { a.path < b.path }
}
