import JSON

/// What a write answers: a status, a representation (none for `204`) and,
/// for a creation, where the new resource lives.
public struct Answer: Sendable {
    public var status: Int
    public var body: [UInt8]?
    public var location: String?

    public init(status: Int, body: [UInt8]?, location: String? = nil) {
        self.status = status
        self.body = body
        self.location = location
    }

    public static func ok(_ representation: Representation) -> Answer { Answer(status: 200, body: representation.bytes) }
    public static func created(_ representation: Representation, at location: String) -> Answer {
        Answer(status: 201, body: representation.bytes, location: location)
    }
    public static let noContent = Answer(status: 204, body: nil)
}
