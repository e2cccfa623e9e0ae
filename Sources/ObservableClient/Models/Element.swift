import JSON

/// An object that is one element of a collection on the server, made from
/// the element's JSON the first time the client sees its id.
@MainActor
protocol Element: RemoteObject {
    init(id: String, path: String, client: ObservableClient)
    /// The element's path, from its id and the path of what holds it.
    static func path(id: String, parent: String) -> String
}

/// An object that holds collections, which a repair can replace whole.
@MainActor
protocol CollectionOwner: RemoteObject {
    /// Replaces the collection `field` (empty: the object's own) with the
    /// elements a repair listed.
    func replace(_ field: String, with elements: [JSONValue])
}

extension Array where Element: AnyObject & Identifiable, Element.ID == String {
    func contains(id: String) -> Bool { contains { $0.id == id } }
}
