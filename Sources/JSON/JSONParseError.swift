/// Why a body is not acceptable JSON, with the byte offset where it failed.
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}
