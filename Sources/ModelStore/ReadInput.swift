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
