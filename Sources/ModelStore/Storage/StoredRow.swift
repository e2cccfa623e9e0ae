import JSON

/// One stored row as the engine sees it.
public struct StoredRow: Sendable {
    public var id: String
    public var parentId: String?
    public var position: Int64
    public var values: [JSONValue]

    public init(id: String, parentId: String?, position: Int64, values: [JSONValue]) {
        self.id = id
        self.parentId = parentId
        self.position = position
        self.values = values
    }
}
