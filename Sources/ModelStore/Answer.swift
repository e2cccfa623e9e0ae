import JSON

/// What a write answers: a status, a representation (none for `204`) and,
/// for a creation, where the new resource lives.
public struct Answer: Sendable {
    public var status: Int
    public var body: [UInt8]? {
        get { stored ?? render?() }
        set { stored = newValue; render = nil }
    }
    public var location: String?
    private var stored: [UInt8]?
    /// Makes the body when it is asked for: a representation worked out
    /// after the commit, outside the writer lock, on the state the write
    /// left. It renders on each ask: ask once (`ObservableAPI.answer`).
    private var render: (@Sendable () -> [UInt8])?

    public init(status: Int, body: [UInt8]?, location: String? = nil) {
        self.status = status
        stored = body
        self.location = location
    }

    public static func ok(_ representation: Representation) -> Answer { Answer(status: 200, body: representation.bytes) }
    /// `200` with the representation `render` makes, once it is asked for.
    public static func ok(rendering render: @escaping @Sendable () -> Representation) -> Answer {
        var answer = Answer(status: 200, body: nil)
        answer.render = { render().bytes }
        return answer
    }
    public static func created(_ representation: Representation, at location: String) -> Answer {
        Answer(status: 201, body: representation.bytes, location: location)
    }
    public static let noContent = Answer(status: 204, body: nil)
}
