/// A write that needs code (tap, choose, progress, login, …): where it is
/// addressed, the fields its input takes (checked as a model's are), and
/// what it does.
public struct Action: Sendable {
    /// `/grid/dots/:id/tap`: `:name` segments are parameters.
    public let pattern: String
    public let input: [Field]
    public let run: @Sendable (ActionInput) throws -> Plan

    /// What an action does: one prepared write, committed with the writes
    /// beside it, or several writes in order.
    public enum Plan: Sendable {
        case write(PreparedWrite<Answer>)
        case writes(@Sendable (Store) throws -> Answer)
    }

    public init(_ pattern: String, input: [Field] = [], run: @escaping @Sendable (ActionInput) throws -> Plan) {
        self.pattern = pattern
        self.input = input
        self.run = run
    }
}
