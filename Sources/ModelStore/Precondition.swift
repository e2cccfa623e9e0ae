/// What a client expects of the element a write changes (that it is still
/// as the client last read it), checked against its current representation
/// inside the write, before anything moves: `check` throws a
/// `preconditionFailed` refusal when it is not.
public struct Precondition: Sendable {
    let check: @Sendable (Representation) throws(ModelError) -> Void

    public init(_ check: @escaping @Sendable (Representation) throws(ModelError) -> Void) {
        self.check = check
    }
}
