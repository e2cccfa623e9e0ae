/// Which fields of a resource a read shows: every one, or those named.
public struct FieldSelection: Sendable {
    let names: Set<String>?

    /// The fields named, sorted (a shape's); nil for all.
    public var shapeFields: [String]? { names.map { $0.sorted() } }

    /// Every field.
    public static let all = FieldSelection(names: nil)

    /// The fields `names` names (each one of the resource's), or every one
    /// for nil.
    public init(names: Set<String>?) {
        self.names = names
    }

    public func includes(_ name: String) -> Bool {
        names?.contains(name) ?? true
    }
}
