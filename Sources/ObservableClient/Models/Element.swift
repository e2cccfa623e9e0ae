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

/// A list the client can load whole, or a page at a time newest first.
@MainActor
protocol PagedList: CollectionOwner {
    /// The `Link` of the next older page; nil on the last page, or when loaded whole.
    var nextPage: String? { get set }
    /// The page size it was loaded with; nil: loaded whole.
    var pageSize: Int? { get set }
    /// The pages loaded, for reading them again.
    var pages: Int { get set }
    /// Adds the elements of a further page that are not there yet.
    func append(page elements: [JSONValue])
}

extension PagedList {
    /// A repair's or a reread's elements in the list's order: as given when
    /// loaded whole; newest first, each once, when paged (the windows of
    /// several pages may come together).
    func pageOrder(_ elements: [JSONValue]) -> [JSONValue] {
        guard pageSize != nil else { return elements }
        var seen = Set<String>()
        return elements.filter { $0.id.map { seen.insert($0).inserted } ?? false }.sorted { ($0.id ?? "") > ($1.id ?? "") }
    }

    /// The query of the first page (or of the whole list), with `fields`.
    func firstPageQuery(fields: String? = nil, covering count: Int = 0) -> String {
        var parameters: [String] = []
        if let pageSize { parameters += ["limit=\(min(max(pageSize, count), 1000))", "order=desc"] }
        if let fields { parameters.append(fields) }
        return parameters.isEmpty ? path : path + "?" + parameters.joined(separator: "&")
    }
}
