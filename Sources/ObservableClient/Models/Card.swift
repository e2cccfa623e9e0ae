import JSON
import Observation

/// A card of a memory game (`/games/{id}/cards/{cardId}`).
public final class Card: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// The card's face, an emoji; it never changes.
    public var content: String { noteRead(0, \.content); return _content }
    /// True while the card shows its face.
    public var isFaceUp: Bool { noteRead(1, \.isFaceUp); return _isFaceUp }
    /// True once the card is matched with its pair.
    public var isMatched: Bool { noteRead(2, \.isMatched); return _isMatched }

    var _content = "", _isFaceUp = false, _isMatched = false
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Card.allFields
    var freshAt: Int64 = -1
    static let fields = ["content", "isFaceUp", "isMatched"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { parent + "/cards/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "content": update(\.content, \._content, value.string)
        case "isFaceUp": update(\.isFaceUp, \._isFaceUp, value.bool)
        case "isMatched": update(\.isMatched, \._isMatched, value.bool)
        default: break
        }
    }

    var representation: JSONValue {
        ["id": .string(id), "content": .string(_content), "isFaceUp": .bool(_isFaceUp), "isMatched": .bool(_isMatched)]
    }

    /// Chooses the card (`POST /games/{id}/cards/{cardId}/choose`), by the
    /// game's rules; what turns over arrives through the feed.
    public func choose() async throws {
        try await ObservableClient.write(client, "POST", path + "/choose")
    }
}
