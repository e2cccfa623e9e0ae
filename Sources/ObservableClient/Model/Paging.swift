import JSON

/// The elements of a list shown newest first, each once. A read lists them
/// so already (its pages newest first, in order). A repair lists each
/// loaded window oldest first, the windows in no particular order: the
/// elements the list holds keep their order (`current`, its ids now), and
/// those it does not hold, inserted since, go first, newest first. (Ids do
/// not tell the order: two made in one millisecond compare either way.)
func newestFirst(_ elements: [JSONValue], repaired: Bool, current: [String]) -> [JSONValue] {
    var seen = Set<String>()
    let unique = elements.filter { $0.id.map { seen.insert($0).inserted } ?? false }
    guard repaired else { return unique }
    var index: [String: Int] = [:]
    for (position, id) in current.enumerated() where index[id] == nil { index[id] = position }
    let inserted = unique.filter { index[$0.id ?? ""] == nil }
    let held = unique.filter { index[$0.id ?? ""] != nil }.sorted { index[$0.id ?? ""]! < index[$1.id ?? ""]! }
    return inserted.reversed() + held
}

extension Array where Element: AnyObject & Identifiable, Element.ID == String {
    func contains(id: String) -> Bool { contains { $0.id == id } }
}

/// A list the client can load whole, or a page at a time newest first.
protocol PagedList: RemoteModel {
    /// The `Link` of the next older page; nil on the last page, or when loaded whole.
    var nextPage: String? { get set }
    /// The page size it was loaded with; nil: loaded whole.
    var pageSize: Int? { get set }
    /// The pages loaded, for reading them again.
    var pages: Int { get set }
    /// The elements it holds.
    var held: [any RemoteModel] { get }
    /// The names of its elements' fields.
    var elementFields: [String] { get }
    /// Adds the elements of a further page that are not there yet.
    func append(page elements: [JSONValue])
}

extension PagedList {
    /// A read's or a repair's elements in the list's order: as given when
    /// loaded whole; newest first, each once, when paged (`newestFirst`).
    func pageOrder(_ elements: [JSONValue], repaired: Bool, current: [String]) -> [JSONValue] {
        guard pageSize != nil else { return elements }
        return newestFirst(elements, repaired: repaired, current: current)
    }

    /// The query of the first page (or of the whole list), with `fields`.
    func firstPageQuery(fields: String? = nil, covering count: Int = 0) -> String {
        var parameters: [String] = []
        if let pageSize { parameters += ["limit=\(min(max(pageSize, count), 1000))", "order=desc"] }
        if let fields { parameters.append(fields) }
        return parameters.isEmpty ? path : path + "?" + parameters.joined(separator: "&")
    }
}
