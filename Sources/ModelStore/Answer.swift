import JSON

/// What a write answers: what it did and the representation it shows
/// (none when it removed what it was asked to change).
public struct Answer: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// It shows what the write left: an element changed, an action's result.
        case shown
        /// It made a new resource, which lives at `path`.
        case created(path: String)
        /// It removed what it was asked to: nothing is shown.
        case removed
    }

    public var outcome: Outcome
    public var body: [UInt8]? {
        get { stored ?? render?() }
        set { stored = newValue; render = nil }
    }
    private var stored: [UInt8]?
    /// Makes the body when it is asked for: a representation worked out
    /// after the commit, outside the writer lock, on the state the write
    /// left. It renders on each ask: ask once (`ObservableAPI.answer`).
    private var render: (@Sendable () -> [UInt8])?

    public init(_ outcome: Outcome, body: [UInt8]?) {
        self.outcome = outcome
        stored = body
    }

    public static func ok(_ representation: Representation) -> Answer { Answer(.shown, body: representation.bytes) }
    /// The representation `render` makes, once it is asked for.
    public static func ok(rendering render: @escaping @Sendable () -> Representation) -> Answer {
        var answer = Answer(.shown, body: nil)
        answer.render = { render().bytes }
        return answer
    }
    public static func created(_ representation: Representation, at path: String) -> Answer {
        Answer(.created(path: path), body: representation.bytes)
    }
    public static let removed = Answer(.removed, body: nil)
}
