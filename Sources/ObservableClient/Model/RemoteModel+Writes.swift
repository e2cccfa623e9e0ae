import JSON

/// One field's value in a write: `.set(\.name, "Cruller")`, `.set(\.topping, nil)`.
public struct RemoteEdit<Model: RemoteModel>: @unchecked Sendable {
    let key: AnyKeyPath
    let value: JSONValue

    /// The field `key` (a field of the model) set to `value`.
    public static func set<Value: RemoteValue>(_ key: KeyPath<Model, Value>, _ value: Value) -> RemoteEdit {
        RemoteEdit(key: key, value: value.remoteJSON)
    }

    /// The edits as a JSON body, each under its field's server name.
    static func body(_ edits: [RemoteEdit]) -> JSONValue {
        var body = JSONObject()
        for edit in edits {
            guard let field = Model._$schema.fields.first(where: { $0.keyPath == edit.key }) else {
                preconditionFailure("RemoteEdit: \(edit.key) is not a field of \(Model.self)")
            }
            body[field.name] = edit.value
        }
        return .object(body)
    }
}

extension RemoteModel {
    /// Changes the fields given (`PATCH` of the object's path); on an
    /// element, with `If-Match` naming the version the object shows. The new
    /// values arrive through the feed, as anyone else's changes do. (A
    /// singleton's version covers what the client may not hold, as every
    /// order of the truck: its writes name none.)
    /// - Throws: `ObservableClientError.conflict` when the object changed on
    ///   the server since this client last saw it; `.rejected` for a value
    ///   the server refuses.
    public func update(_ edits: RemoteEdit<Self>...) async throws {
        try await ObservableClient.write(
            _$client, "PATCH", _$path, body: RemoteEdit.body(edits),
            // (`Optional.none`: a bare `nil` would be JSON's null, a tag of its own.)
            ifMatch: self is any RemoteElement ? Optional(representation) : Optional.none)
    }
}

extension RemoteElement {
    /// Deletes the element (`DELETE` of its path, with `If-Match`). It
    /// leaves its collections when the feed brings its removal.
    public func delete() async throws {
        try await ObservableClient.write(_$client, "DELETE", _$path, ifMatch: representation)
    }
}

extension ObservableClient {
    /// Creates an element (`POST` to its collection) with the fields given,
    /// and returns it, tracked: the same object the feed's insert brings.
    @discardableResult
    public func create<Item: RemoteElement>(_ type: Item.Type, _ fields: RemoteEdit<Item>...) async throws -> Item {
        try await create(type, fields)
    }

    func create<Item: RemoteElement>(_ type: Item.Type, _ fields: [RemoteEdit<Item>]) async throws -> Item {
        try await create(type, body: RemoteEdit.body(fields))
    }

    func create<Item: RemoteElement>(_ type: Item.Type, body: JSONValue) async throws -> Item {
        let created = try await ObservableClient.write(self, "POST", Item.collectionPath, body: body)
        return try await ObservableClient.created(self, Item.self, created, parent: "")
    }
}
