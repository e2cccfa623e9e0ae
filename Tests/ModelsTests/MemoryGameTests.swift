import JSON
import ModelStore
@testable import Models
import Testing

/// `choose` by the lecture's rules, on a game held in memory.
@Suite struct MemoryGameTests {
    /// A game whose cards have `contents`, in that order, all face down.
    static func game(_ contents: [String]) -> Record {
        var game = Record.new(MemoryGame.games, [:])
        for (position, content) in contents.enumerated() {
            var card = Record.new(MemoryGame.cards, in: game.path, ["content": .string(content)])
            card.position = Int64(position)
            game[MemoryGame.cards][card.id] = card
        }
        return game
    }

    static func ids(_ game: Record) -> [String] { game[MemoryGame.cards].values.map(\.id) }

    /// Each card as `up`/`down`, and `matched` when it is.
    static func table(_ game: Record) -> [String] {
        game[MemoryGame.cards].values.map { card in
            card.bool("isMatched") ? "matched" : card.bool("isFaceUp") ? "up" : "down"
        }
    }

    @Test func withNoCardFaceUpTheChosenTurnsUp() {
        var game = Self.game(["👻", "🎃", "👻", "🎃"])
        MemoryGame.choose(Self.ids(game)[1], in: &game)
        #expect(Self.table(game) == ["down", "up", "down", "down"])
    }

    @Test func aSecondCardOfTheSameContentMatchesBothAndTheyStayUp() {
        var game = Self.game(["👻", "🎃", "👻", "🎃"])
        let ids = Self.ids(game)
        MemoryGame.choose(ids[0], in: &game)
        MemoryGame.choose(ids[2], in: &game)
        #expect(Self.table(game) == ["matched", "down", "matched", "down"])
        #expect(game[MemoryGame.cards].values.filter { $0.bool("isMatched") }.allSatisfy { $0.bool("isFaceUp") })
    }

    @Test func aSecondCardOfOtherContentTurnsUpWithoutAMatch() {
        var game = Self.game(["👻", "🎃", "👻", "🎃"])
        let ids = Self.ids(game)
        MemoryGame.choose(ids[0], in: &game)
        MemoryGame.choose(ids[1], in: &game)
        #expect(Self.table(game) == ["up", "up", "down", "down"])
    }

    @Test func withTwoUnmatchedCardsUpTheyTurnDownAndTheChosenTurnsUp() {
        var game = Self.game(["👻", "🎃", "👻", "🎃", "🍬", "🍬"])
        let ids = Self.ids(game)
        MemoryGame.choose(ids[4], in: &game)
        MemoryGame.choose(ids[5], in: &game)  // matched: stays up, counts as face up no more
        MemoryGame.choose(ids[0], in: &game)
        MemoryGame.choose(ids[1], in: &game)
        MemoryGame.choose(ids[3], in: &game)
        #expect(Self.table(game) == ["down", "down", "down", "up", "matched", "matched"])
    }

    @Test func aFaceUpOrMatchedCardOrAnUnknownOneChangesNothing() {
        var game = Self.game(["👻", "🎃", "👻", "🎃"])
        let ids = Self.ids(game)
        MemoryGame.choose(ids[0], in: &game)
        MemoryGame.choose(ids[2], in: &game)
        MemoryGame.choose(ids[1], in: &game)
        let before = Self.table(game)
        MemoryGame.choose(ids[1], in: &game)  // face up
        MemoryGame.choose(ids[0], in: &game)  // matched
        MemoryGame.choose("no-such-card", in: &game)
        #expect(Self.table(game) == before)
        #expect(before == ["matched", "up", "matched", "down"])
    }

    @Test func aDealHasTwoCardsOfEachOfItsDistinctContents() {
        var generator = SystemRandomNumberGenerator()
        for pairs in [1, 3, MemoryGame.emoji.count] {
            let cards = MemoryGame.deal(pairs: pairs, using: &generator)
            #expect(cards.count == 2 * pairs)
            let counts = Dictionary(grouping: cards, by: { $0 }).mapValues(\.count)
            #expect(counts.count == pairs)
            #expect(counts.values.allSatisfy { $0 == 2 })
        }
    }

    @Test func aDealDependsOnlyOnItsGenerator() {
        /// A generator that repeats the same sequence for the same start.
        struct Counter: RandomNumberGenerator {
            var state: UInt64
            mutating func next() -> UInt64 {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return state
            }
        }
        var first = Counter(state: 7), second = Counter(state: 7), other = Counter(state: 8)
        let deal = MemoryGame.deal(pairs: 8, using: &first)
        #expect(MemoryGame.deal(pairs: 8, using: &second) == deal)
        #expect(MemoryGame.deal(pairs: 8, using: &other) != deal)
    }
}
