import Foundation
import ModelObservation
@testable import ModelStore
import ModelStoreDatabases
import Models
import Testing
import TestSupport

/// Reads that wait for the group commit (PostgreSQL's) take effect in the
/// order of what they saw, whatever order they came in.
@Suite struct ReadOrderTests {
    /// Two reads of one observer, the later one (at the newer `seq`) queued
    /// first, in one group commit: the key keeps the earlier `seq`, so the
    /// change between the two is delivered, and so it stays after a restart.
    @Test func twoReadsOfOneObserverInOneCommitKeepTheEarlierSeq() throws {
        let url = try TestPostgres.freshDatabaseURL()
        let key = PropertyKey("/truck/orderCount")
        var id = ""
        do {
            let store = try Store(configuration: Store.Configuration(database: url), catalog: SeedModels.catalog())
            defer { store.close() }
            id = try store.createObserver().id
            // Two orders: orderCount moves at seq 2 (0 → 1) and at seq 4 (1 → 2).
            for quantity in [1, 2] as [Int64] { _ = try store.write(try GroupCommitTests.order(GroupCommitTests.glazed, quantity)) }
            #expect(store.state.seq == 4)
            let outcomes = GroupCommitTests.Outcomes<Void>()
            outcomes.expect(2)
            try GroupCommitTests.whileCommitting(store) {
                for (index, seq) in [(0, 4), (1, 2)] as [(Int, Int64)] {
                    if let outcome = store.submitTrack([key], by: id, at: seq, wait: { true }, then: { { outcomes.record(index, $0) } }) {
                        outcomes.record(index, outcome)
                    }
                }
            }
            let results = outcomes.wait()
            #expect(results.count == 2)
            #expect(store.registry.observer(id)?.reads[key] == 2)
            let poll = store.registry.pollAsConsumer(id, since: 2, limit: 100, coalesce: false, now: 0, parking: .never).poll
            guard case .changes(let changes, let cursor) = poll else {
                Issue.record("a poll since 2 answered \(poll)")
                return
            }
            #expect(changes.map(\.seq) == [4])
            #expect(cursor == 4)
        }
        let reopened = try Store(configuration: Store.Configuration(database: url), catalog: SeedModels.catalog())
        defer { reopened.close() }
        #expect(reopened.registry.observer(id)?.reads[key] == 2)
    }
}
