/// An action's request: its path parameters and its checked body.
public struct ActionInput: Sendable {
    public let parameters: [String: String]
    public let body: ValidatedBody

    public init(parameters: [String: String], body: ValidatedBody) {
        self.parameters = parameters
        self.body = body
    }

    public func parameter(_ name: String) -> String { parameters[name] ?? "" }
}
