import JSON
import Observation

/// A memory game (`/games/{id}`): its cards, which keep their places, and
/// whether every pair is matched.
public final class Game: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// The cards on the table, in their places.
    public var cards: [Card] { noteRead(0, \.cards); return _cards }
    /// True once every card is matched (computed by the server).
    public var isOver: Bool { noteRead(1, \.isOver); return _isOver }

    var _cards: [Card] = [], _isOver = false
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Game.allFields
    var freshAt: Int64 = -1
    static let fields = ["cards", "isOver"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { "/games/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "cards":
            guard let client, let cards = value.arrayValue else { return }
            let new = cards.map { client.element(Card.self, $0, parent: path) }
            update(\.cards, \._cards, new)
        case "isOver": update(\.isOver, \._isOver, value.bool)
        default: break
        }
    }

    var representation: JSONValue {
        ["id": .string(id), "cards": .array(_cards.map(\.representation)), "isOver": .bool(_isOver)]
    }

    /// Deletes the game (`DELETE /games/{id}` with `If-Match`).
    public func delete() async throws {
        try await ObservableClient.write(client, "DELETE", path, ifMatch: representation)
    }
}
