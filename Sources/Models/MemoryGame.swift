import JSON
import ModelStore

/// The memory game (Stanford CS193p, lecture 3): pairs of cards face down,
/// turned up two at a time until every pair is matched.
public enum MemoryGame {
    public static let content = Stored<String>(.text("content", access: .serverOnly, limits: nil, description: "The pair's emoji; never changes."))
    public static let isFaceUp = Stored<Bool>(.boolean("isFaceUp", default: false, access: .serverOnly))
    public static let isMatched = Stored<Bool>(.boolean("isMatched", default: false, access: .serverOnly))

    public static let cards = Resource.collection("cards", element: "card", at: "cards", allowing: [.get], tag: "memory game") {
        content
        isFaceUp
        isMatched
    }

    public static let games = Resource.collection("games", element: "game", at: "/games", allowing: [.list, .get, .delete],
                                                  tag: "memory game", queryable: ["isOver"]) {
        cards
        Computed("isOver", .boolean, description: "True when every card is matched") { game in .bool(game[cards].values.allSatisfy { $0[isMatched] }) }
    }

    /// Distinct card contents, one per pair.
    static let emoji = [
        "👻", "🎃", "🍬", "😈", "💀", "🦉", "🧙", "🙀", "👹", "😱", "🐢", "🍭", "🦇",
        "🐶", "🐱", "🦊", "🐼", "🐸", "🐙", "🦄", "🐝", "🌵", "🍄", "🌈", "🍕", "🍩",
    ]

    /// What `POST /games` takes.
    enum Input {
        static let pairs = Stored<Int64>(.integer("pairs", range: 1...Int64(emoji.count)))
        static let seed = Stored<Int64>(.integer("seed"))
    }

    static let actions = [
        // With a `seed`, the choice of contents and the order of the cards are the same every time.
        Action("/games", input: [Input.pairs.field.required, Input.seed.field.optional]) { input in
            let pairs = Int(input.body[Input.pairs] ?? 1)
            let contents: [String]
            if let seed = input.body[Input.seed] {
                var generator = SplitMix64(seed: UInt64(bitPattern: seed))
                contents = deal(pairs: pairs, using: &generator)
            } else {
                var generator = SystemRandomNumberGenerator()
                contents = deal(pairs: pairs, using: &generator)
            }
            var game = Record.new(games, [:])
            for (position, content) in contents.enumerated() {
                var card = Record.new(cards, in: game.path, setting: [Self.content.with(content)])
                card.position = Int64(position)
                game[cards][card.id] = card
            }
            return .write(PreparedWrite { [game] tx in
                let stored = try tx.insert(game, into: games)
                return .created(games.representation(of: stored, in: tx.state), at: stored.path)
            })
        },
        // Each card field that moves is a change of its own; `isOver` moves with the last match.
        Action("/games/:id/cards/:cardId/choose") { input in
            let id = input.parameter("id"), cardId = input.parameter("cardId")
            return .write(PreparedWrite { tx in
                guard let game = tx.state[games][id] else { throw ModelError.notFound("no game \(id)") }
                guard game[cards][cardId] != nil else { throw ModelError.notFound("no card \(cardId) in game \(id)") }
                let chosen = try tx.update(games, id) { choose(cardId, in: &$0) }
                return .ok(games.representation(of: chosen, in: tx.state))
            })
        },
    ]

    /// Chooses a card by the lecture's rules: a face-up or matched card
    /// changes nothing; with exactly one unmatched card face up, the chosen
    /// card turns up and matches it when their contents are equal; otherwise
    /// every unmatched card turns down and the chosen one up.
    static func choose(_ cardId: String, in game: inout Record) {
        guard let chosen = game[cards][cardId], !chosen[isFaceUp], !chosen[isMatched] else { return }
        let faceUp = game[cards].values.filter { $0[isFaceUp] && !$0[isMatched] }
        if faceUp.count == 1, let other = faceUp.first {
            if other[content] == chosen[content] {
                game[cards][other.id]?[isMatched] = true
                game[cards][cardId]?[isMatched] = true
            }
        } else {
            for card in faceUp { game[cards][card.id]?[isFaceUp] = false }
        }
        game[cards][cardId]?[isFaceUp] = true
    }

    /// Picks `pairs` distinct contents and shuffles their `2 × pairs` cards.
    static func deal<G: RandomNumberGenerator>(pairs: Int, using generator: inout G) -> [String] {
        var contents = emoji
        shuffle(&contents, using: &generator)
        var cards = contents.prefix(pairs).flatMap { [$0, $0] }
        shuffle(&cards, using: &generator)
        return cards
    }

    /// Fisher–Yates, spelled out so that a seeded deal does not depend on
    /// the standard library's choice of algorithm.
    private static func shuffle<G: RandomNumberGenerator>(_ elements: inout [String], using generator: inout G) {
        guard elements.count > 1 else { return }
        for i in stride(from: elements.count - 1, to: 0, by: -1) {
            elements.swapAt(i, Int(generator.next() % UInt64(i + 1)))
        }
    }
}

/// SplitMix64: a small generator whose sequence depends only on its seed.
private struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
