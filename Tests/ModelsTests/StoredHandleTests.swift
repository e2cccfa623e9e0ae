import JSON
import ModelStore
@testable import Models
import Testing

/// The typed handles the seed's action code reads and writes fields by:
/// each names a field of the model it is used with, of its own kind.
@Suite struct StoredHandleTests {
    static func names<Value>(_ resource: Resource, _ handle: Stored<Value>) -> Bool {
        resource.field(handle.name)?.kind == handle.field.kind
    }

    @Test func everyHandleNamesAFieldOfItsModel() {
        #expect(Self.names(Jobs.jobs, Jobs.current))
        #expect(Self.names(Jobs.jobs, Jobs.total))
        #expect(Self.names(Jobs.jobs, Jobs.step))
        #expect(Self.names(Jobs.jobs, Jobs.intervalMs))
        #expect(Self.names(MemoryGame.cards, MemoryGame.content))
        #expect(Self.names(MemoryGame.cards, MemoryGame.isFaceUp))
        #expect(Self.names(MemoryGame.cards, MemoryGame.isMatched))
        #expect(Self.names(FoodTruck.orders, FoodTruck.donutId))
        #expect(Self.names(Account.account, Account.userName))
        #expect(Self.names(DotGrid.dots, DotGrid.row))
        #expect(Self.names(DotGrid.dots, DotGrid.col))
        #expect(Self.names(DotGrid.dots, DotGrid.isRandomAnimated))
        #expect(Self.names(Posts.posts, Posts.height))
    }

    /// A handle reads and writes its field typed, `null` as nil, and a
    /// handle of another model reads as `null` would and writes nothing.
    @Test func aHandleReadsAndWritesItsFieldTyped() {
        var job = Record.new(Jobs.jobs, setting: [Jobs.current.with(3), Jobs.total.with(10), Jobs.step.with(nil)])
        #expect(job[Jobs.current] == 3)
        #expect(job[Jobs.step] == nil)
        #expect(job[json: Jobs.total] == .int(10))
        job[Jobs.step] = 2
        #expect(job[json: Jobs.step] == .int(2))
        #expect(job[MemoryGame.isMatched] == false)
        job[MemoryGame.isMatched] = true
        #expect(job[json: MemoryGame.isMatched] == .null)
    }
}
