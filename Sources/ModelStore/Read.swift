/// A read that needs code (the grid's rows, posts in columns): its route,
/// the fields `?fields=` may select, and how it renders from the state.
public struct Read: Sendable {
    public let pattern: String
    public let selectableFields: [String]
    public let render: @Sendable (ReadInput, ModelState) throws -> Representation

    public init(_ pattern: String, fields: [String], render: @escaping @Sendable (ReadInput, ModelState) throws -> Representation) {
        self.pattern = pattern
        self.selectableFields = fields
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
