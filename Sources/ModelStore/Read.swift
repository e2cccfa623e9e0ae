/// A read that needs code (the grid's rows, posts in columns): its route,
/// the fields `?fields=` may select, how it renders from the state, and the
/// keys it tracks that no declaration shows (`views`).
public struct Read: Sendable {
    public let pattern: String
    public let selectableFields: [String]
    public let render: @Sendable (ReadInput, ModelState) throws -> Representation
    public let views: [View]

    public init(_ pattern: String, fields: [String], views: [View] = [],
                render: @escaping @Sendable (ReadInput, ModelState) throws -> Representation)
    {
        self.pattern = pattern
        self.selectableFields = fields
        self.views = views
        self.render = render
    }
}
