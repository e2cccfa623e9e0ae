import JSON
import Observation

/// The memory games (`/games`): every one oldest first, or, loaded with a page size, the
/// newest page first and older pages on demand.
public final class GameList: PagedList {
    /// The games loaded: every one in the order they were made, or, when
    /// loaded a page at a time, the pages loaded so far, newest first. New
    /// ones arrive at the end, or at the front when paged.
    public var games: [Game] { noteRead(0, \.games); return _games }
    /// True while older ones remain to be loaded with `loadMore()`.
    public var hasMore: Bool {
        registrar.access(self, keyPath: \.hasMore)
        return nextPage != nil
    }

    var _games: [Game] = []
    var nextPage: String? {
        didSet { if nextPage != oldValue { registrar.withMutation(of: self, keyPath: \.hasMore) {} } }
    }
    var pageSize: Int?
    var pages = 1
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
        if field == "games" { replace("", with: value.arrayValue ?? [], repaired: false) }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_games.contains(id: id) else { return }
            let element = client.element(Game.self, new, parent: path)
            update(\.games, \._games, pageSize == nil ? _games + [element] : [element] + _games)
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.games, \._games, _games.filter { $0.id != id })
            client.forget(Game.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let client else { return }
        let ordered = pageOrder(elements, repaired: repaired, current: _games.map(\.id))
        update(\.games, \._games, ordered.map { client.element(Game.self, $0, parent: path) })
    }

    func append(page elements: [JSONValue]) {
        guard let client else { return }
        let known = Set(_games.map(\.id))
        let added = elements.filter { !known.contains($0.id ?? "") }.map { client.element(Game.self, $0, parent: path) }
        update(\.games, \._games, _games + added)
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        guard let client, let next = nextPage else { return }
        try await client.loadPage(next, into: self)
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
