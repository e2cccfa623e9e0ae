/// A card of a memory game (`/games/{id}/cards/{cardId}`).
@RemoteModel("{parent}/cards/{id}")
public final class Card {
    /// The server's id, which never changes.
    public let id: String
    /// The card's face, an emoji; it never changes.
    public var content: String
    /// True while the card shows its face.
    public var isFaceUp: Bool
    /// True once the card is matched with its pair.
    public var isMatched: Bool

    /// Chooses the card (`POST /games/{id}/cards/{cardId}/choose`), by the
    /// game's rules; what turns over arrives through the feed.
    public func choose() async throws {
        try await ObservableClient.write(client, "POST", path + "/choose")
    }
}
