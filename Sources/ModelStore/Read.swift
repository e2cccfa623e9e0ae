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

/// A custom read's request.
public struct ReadInput: Sendable {
    public let parameters: [String: String]
    public let query: @Sendable (String) -> String?
    public let selection: FieldSelection

    public init(parameters: [String: String], query: @escaping @Sendable (String) -> String?, selection: FieldSelection) {
        self.parameters = parameters
        self.query = query
        self.selection = selection
    }

    public func parameter(_ name: String) -> String { parameters[name] ?? "" }
}
