import JSON
import Observation

/// The memory games (`/games`): every one oldest first, or, loaded with a page size, the
/// newest page first and older pages on demand.
public final class GameList: ElementList, @unchecked Sendable {
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
    static var elementsKey: KeyPath<GameList, [Game]> { \.games }
    static var storage: ReferenceWritableKeyPath<GameList, [Game]> { \._games }

    init(client: ObservableClient) {
        self.client = client
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        try await loadNextPage()
    }

    /// Deals a new game of `pairs` pairs (`POST /games`) and returns it,
    /// tracked. The same `seed` deals the same cards.
    public func create(pairs: Int, seed: Int64? = nil) async throws -> Game {
        var body = JSONObject()
        body["pairs"] = .int(Int64(pairs))
        if let seed { body["seed"] = .int(seed) }
        return try await create(.object(body))
    }
}
