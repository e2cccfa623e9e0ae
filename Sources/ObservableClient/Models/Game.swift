/// A memory game (`/games/{id}`): its cards, which keep their places, and
/// whether every pair is matched.
@RemoteModel("/games/{id}")
public final class Game {
    /// The server's id, which never changes.
    public let id: String
    /// The cards on the table, in their places.
    public var cards: [Card]
    /// True once every card is matched (computed by the server).
    public var isOver: Bool
}
