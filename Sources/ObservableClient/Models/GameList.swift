import JSON
import Observation

/// The memory games (`/games`).
@MainActor
public final class GameList: CollectionOwner {
    /// Every one, in the order they were made.
    public var games: [Game] { noteRead(0, \.games); return _games }

    var _games: [Game] = []
    let path = "/games"
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = GameList.allFields
    var freshAt: Int64 = -1
    static let fields = ["games"]

    init(client: ObservableClient) {
        self.client = client
    }

    func set(_ field: String, _ value: JSONValue) {
        if field == "games" { replace("", with: value.arrayValue ?? []) }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_games.contains(id: id) else { return }
            update(\.games, \._games, _games + [client.element(Game.self, new, parent: path)])
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.games, \._games, _games.filter { $0.id != id })
            client.forget(Game.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue]) {
        guard let client else { return }
        update(\.games, \._games, elements.map { client.element(Game.self, $0, parent: path) })
    }

    /// Deals a new game of `pairs` pairs (`POST /games`) and returns it,
    /// tracked. The same `seed` deals the same cards.
    public func create(pairs: Int, seed: Int64? = nil) async throws -> Game {
        var body = JSONObject()
        body["pairs"] = .int(Int64(pairs))
        if let seed { body["seed"] = .int(seed) }
        let created = try await ObservableClient.write(client, "POST", path, body: .object(body))
        return try await ObservableClient.created(client, Game.self, created, parent: path)
    }
}
