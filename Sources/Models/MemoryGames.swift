import JSON
import ModelObservation
import OrderedCollections
import SQLiteStore

/// A card of a memory game.
public struct Card: Sendable, Equatable {
    public static let fields = ["id", "content", "isFaceUp", "isMatched"]

    public let id: String
    public let gameId: String
    public let content: String
    public internal(set) var isFaceUp: Bool
    public internal(set) var isMatched: Bool

    public var path: String { MemoryGames.path + "/" + gameId + "/cards/" + id }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path)
        builder.constant("id", .string(id))
        builder.field("content", .string(content), selection)
        builder.field("isFaceUp", .bool(isFaceUp), selection)
        builder.field("isMatched", .bool(isMatched), selection)
        return builder.finish()
    }
}

/// A memory game (Stanford CS193p, lecture 3): pairs of cards face down,
/// turned up two at a time until every pair is matched.
public struct MemoryGame: Sendable, Equatable {
    public static let fields = ["id", "cards", "isOver"]
    public static let pairsRange: ClosedRange<Int64> = 1...26
    /// Distinct card contents, one per pair.
    public static let emoji = [
        "👻", "🎃", "🍬", "😈", "💀", "🦉", "🧙", "🙀", "👹", "😱", "🐢", "🍭", "🦇",
        "🐶", "🐱", "🦊", "🐼", "🐸", "🐙", "🦄", "🐝", "🌵", "🍄", "🌈", "🍕", "🍩",
    ]

    public let id: String
    /// The cards in their places on the table.
    public internal(set) var cards: PersistentOrderedDictionary<String, Card>
    let position: Int64

    public var path: String { MemoryGames.path + "/" + id }
    public var isOverPath: String { path + "/isOver" }

    /// Computed: true when every card is matched.
    public var isOver: Bool { cards.values.allSatisfy(\.isMatched) }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path)
        builder.constant("id", .string(id))
        builder.collection("cards", cards.values.map { $0.representation() }, selection)
        builder.field("isOver", .bool(isOver), selection)
        return builder.finish()
    }

    /// The game after choosing `cardId`, by the lecture's rules: a face-up
    /// or matched card changes nothing; with exactly one unmatched card face
    /// up, the chosen card turns up and matches it when their contents are
    /// equal; otherwise every unmatched card turns down and the chosen one up.
    func choosing(_ cardId: String) -> MemoryGame {
        guard let chosen = cards[cardId], !chosen.isFaceUp, !chosen.isMatched else { return self }
        var game = self
        let faceUp = cards.values.filter { $0.isFaceUp && !$0.isMatched }
        if faceUp.count == 1, let other = faceUp.first {
            if other.content == chosen.content {
                game.cards[other.id]?.isMatched = true
                game.cards[cardId]?.isMatched = true
            }
        } else {
            for card in faceUp { game.cards[card.id]?.isFaceUp = false }
        }
        game.cards[cardId]?.isFaceUp = true
        return game
    }
}

/// Every memory game, in creation order.
public struct MemoryGames: Sendable {
    public static let path = "/games"

    public internal(set) var all: PersistentOrderedDictionary<String, MemoryGame>
    var nextPosition: Int64

    public subscript(id: String) -> MemoryGame? { all[id] }

    public func list(_ selection: FieldSelection = .all) -> Representation {
        let elements = all.values.map { $0.representation(selection) }
        var reads = [PropertyKey(Self.path)]
        for element in elements { reads.append(contentsOf: element.reads) }
        return Representation(json: ["games": .array(elements.map(\.json))], reads: reads)
    }

    static func load(_ database: Database) throws -> MemoryGames {
        var all = PersistentOrderedDictionary<String, MemoryGame>()
        var maxPosition: Int64 = 0
        for row in try database.rows("SELECT id, position FROM games ORDER BY position") {
            let game = MemoryGame(id: row[0].string ?? "", cards: PersistentOrderedDictionary(), position: row[1].int64 ?? 0)
            all[game.id] = game
            maxPosition = max(maxPosition, game.position)
        }
        for row in try database.rows("SELECT id, game_id, content, is_face_up, is_matched FROM cards ORDER BY game_id, position") {
            let card = Card(id: row[0].string ?? "", gameId: row[1].string ?? "", content: row[2].string ?? "",
                            isFaceUp: row[3].int64 == 1, isMatched: row[4].int64 == 1)
            all[card.gameId]?.cards[card.id] = card
        }
        return MemoryGames(all: all, nextPosition: maxPosition + 1)
    }
}
