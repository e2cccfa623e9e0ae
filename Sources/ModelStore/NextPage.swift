/// Where a page that did not show all that follows leaves off: a
/// representation holds one for each paged collection it shows that has more.
public struct NextPage: Sendable, Equatable {
    /// The collection's path (`/truck/donuts`, `/games/{id}/cards`).
    public let collection: String
    /// The page that follows: the same limit and order, after the last element shown.
    public let page: Page
    /// The fields selected of its elements, sorted; nil for all.
    public let fields: [String]?
    /// The member it is shown under in another's representation (the
    /// truck's `orders`); nil when the collection itself was read.
    public let member: String?
    /// A query read's conditions and sort (`ShapeQuery.text`), and the
    /// cursor of a sorted page (`QueryCursor`), which `after` carries
    /// instead of a position; nil for a plain page.
    public var query: String? = nil
    public var cursor: String? = nil
}
