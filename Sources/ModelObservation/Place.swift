/// Where a change lands, as shapes see it: an element of a collection (by
/// its position) and the field that moved, or its membership (`field`
/// nil: an insert or a remove). A change inside an element nested in
/// another (a card of a game) also lands on the outer element's field
/// that shows the nested collection (`cards`).
///
/// Kept among a change's keys as `/truck/donuts#12/name` or
/// `/truck/orders#40` (no property's path holds `#`), so the change log
/// stores and restores it with them.
public struct Place: Hashable, Sendable {
    public let collection: String
    public let position: Int64
    public let field: String?

    public init(collection: String, position: Int64, field: String? = nil) {
        self.collection = collection
        self.position = position
        self.field = field
    }

    public var key: PropertyKey {
        PropertyKey(collection + "#" + String(position) + (field.map { "/" + $0 } ?? ""))
    }

    /// The place a key made by `key` names; nil for a property's key.
    public init?(key: PropertyKey) {
        let path = key.path
        guard let mark = path.utf8.lastIndex(of: UInt8(ascii: "#")) else { return nil }
        let rest = path[path.index(after: mark)...]
        let number: Substring, field: String?
        if let slash = rest.firstIndex(of: "/") {
            number = rest[..<slash]
            field = String(rest[rest.index(after: slash)...])
        } else {
            number = rest
            field = nil
        }
        guard let position = Int64(number) else { return nil }
        self.init(collection: String(path[..<mark]), position: position, field: field)
    }
}
