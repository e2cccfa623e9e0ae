import FoundationEssentials
import JSON
import OrderedCollections
import SQLiteStore

extension Store {
    /// Deals a new game of `pairs` pairs. With a `seed` the choice of
    /// contents and the order of the cards are the same every time.
    public func createGame(pairs: Int64, seed: Int64? = nil) throws -> MemoryGame {
        try write(Writes.createGame(pairs: pairs, seed: seed))
    }

    /// Chooses a card by the lecture's rules; each card field that moves is
    /// a change of its own, and `isOver` moves with the last match.
    public func chooseCard(_ cardId: String, in gameId: String) throws -> MemoryGame {
        try write(Writes.chooseCard(cardId, in: gameId))
    }

    /// Deletes a game and its cards.
    public func deleteGame(_ id: String, ifMatch: String? = nil) throws {
        try write(Writes.deleteGame(id, ifMatch: ifMatch))
    }

    /// Picks `pairs` distinct contents and shuffles their `2 × pairs` cards.
    static func deal<G: RandomNumberGenerator>(pairs: Int, using generator: inout G) -> [String] {
        var emoji = MemoryGame.emoji
        shuffle(&emoji, using: &generator)
        var contents = emoji.prefix(pairs).flatMap { [$0, $0] }
        shuffle(&contents, using: &generator)
        return contents
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

extension Writes {
    /// Deals a new game of `pairs` pairs. With a `seed` the choice of
    /// contents and the order of the cards are the same every time.
    public static func createGame(pairs: Int64, seed: Int64? = nil) throws -> PreparedWrite<MemoryGame> {
        guard MemoryGame.pairsRange.contains(pairs) else {
            throw ModelError.unprocessable("pairs must be between 1 and \(MemoryGame.pairsRange.upperBound)")
        }
        let contents: [String]
        if let seed {
            var generator = SplitMix64(seed: UInt64(bitPattern: seed))
            contents = Store.deal(pairs: Int(pairs), using: &generator)
        } else {
            var generator = SystemRandomNumberGenerator()
            contents = Store.deal(pairs: Int(pairs), using: &generator)
        }
        return PreparedWrite { tx in
            let id = Identifier.make()
            var cards = PersistentOrderedDictionary<String, Card>()
            for content in contents {
                let card = Card(id: Identifier.make(), gameId: id, content: content, isFaceUp: false, isMatched: false)
                cards[card.id] = card
            }
            let game = MemoryGame(id: id, cards: cards, position: tx.state.games.nextPosition)
            try tx.execute("INSERT INTO games (id, position) VALUES (?, ?)", [.text(id), .integer(game.position)])
            for (position, card) in cards.values.enumerated() {
                try tx.execute("INSERT INTO cards (id, game_id, position, content) VALUES (?, ?, ?, ?)",
                               [.text(card.id), .text(id), .integer(Int64(position)), .text(card.content)])
            }
            tx.state.games.nextPosition += 1
            tx.state.games.all[id] = game
            tx.insert(into: MemoryGames.path, element: game.representation())
            return game
        }
    }

    /// Chooses a card by the lecture's rules; each card field that moves is
    /// a change of its own, and `isOver` moves with the last match.
    public static func chooseCard(_ cardId: String, in gameId: String) -> PreparedWrite<MemoryGame> {
        PreparedWrite { tx in
            guard let game = tx.state.games[gameId] else { throw ModelError.notFound("no game \(gameId)") }
            guard game.cards[cardId] != nil else { throw ModelError.notFound("no card \(cardId) in game \(gameId)") }
            let new = game.choosing(cardId)
            guard new != game else { return game }
            for (old, card) in zip(game.cards.values, new.cards.values) where old != card {
                try tx.execute("UPDATE cards SET is_face_up = ?, is_matched = ? WHERE id = ?",
                               [.integer(card.isFaceUp ? 1 : 0), .integer(card.isMatched ? 1 : 0), .text(card.id)])
                tx.set(card.path + "/isFaceUp", old: .bool(old.isFaceUp), new: .bool(card.isFaceUp))
                tx.set(card.path + "/isMatched", old: .bool(old.isMatched), new: .bool(card.isMatched))
            }
            tx.set(game.isOverPath, old: .bool(game.isOver), new: .bool(new.isOver))
            tx.state.games.all[gameId] = new
            return new
        }
    }

    /// Deletes a game and its cards.
    public static func deleteGame(_ id: String, ifMatch: String? = nil) -> PreparedWrite<Void> {
        PreparedWrite { tx in
            guard let game = tx.state.games[id] else { throw ModelError.notFound("no game \(id)") }
            try tx.require(ifMatch: ifMatch, current: game.representation())
            try tx.execute("DELETE FROM games WHERE id = ?", [.text(id)])
            tx.state.games.all[id] = nil
            tx.remove(from: MemoryGames.path, element: game.representation())
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
