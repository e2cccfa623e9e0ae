/// A problem+json answer of the server (RFC 9457): what went wrong, as the
/// server said it.
public struct Problem: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    public let status: Int
    /// The status's short title, such as "Precondition Failed".
    public let title: String
    /// The server's explanation.
    public let detail: String

    public var description: String { "\(status) \(title): \(detail)" }
}
