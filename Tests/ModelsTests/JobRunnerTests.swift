import Foundation
import JSON
import ModelStore
@testable import Models
import Testing

/// The job runner's rules, on a store that serves nothing: `advance` is
/// called by the test, not by the scheduler's thread.
@Suite struct JobRunnerTests {
    /// Creates a job and returns its id.
    static func job(_ store: Store, total: Int64, step: Int64?) throws -> String {
        let job = Record.new(Jobs.jobs, ["current": 0, "total": .int(total), "step": step.map(JSONValue.int) ?? .null,
                                         "intervalMs": step == nil ? .null : 1000])
        return try store.write { tx in try tx.insert(job, into: Jobs.jobs).id }
    }

    static func current(_ store: Store, _ id: String) -> Int64? {
        store.state[Jobs.jobs][id]?.int("current")
    }

    @Test func advanceAddsTheStepAndStopsAtTheTotal() throws {
        let store = try seedStore()
        defer { store.close() }
        let id = try Self.job(store, total: 100, step: 30)
        var progress: [Int64?] = []
        var running: [Set<String>] = []
        for _ in 0..<4 {
            running.append(Jobs.Runner.advance([id], in: store))
            progress.append(Self.current(store, id))
        }
        #expect(progress == [30, 60, 90, 100])
        #expect(running == [[id], [id], [id], []])
        // A complete job is advanced no more: nothing is written.
        let seq = store.state.seq
        #expect(Jobs.Runner.advance([id], in: store).isEmpty)
        #expect(store.state.seq == seq)
        #expect(Self.current(store, id) == 100)
    }

    @Test func advancePassesOverJobsClientsReportAndJobsThatAreGone() throws {
        let store = try seedStore()
        defer { store.close() }
        let reported = try Self.job(store, total: 100, step: nil)
        let seq = store.state.seq
        #expect(Jobs.Runner.advance([reported, "no-such-job"], in: store).isEmpty)
        #expect(Self.current(store, reported) == 0)
        #expect(store.state.seq == seq)
    }

    @Test func jobsDueTogetherAdvanceInOneTransaction() throws {
        let store = try seedStore()
        defer { store.close() }
        let a = try Self.job(store, total: 10, step: 4), b = try Self.job(store, total: 10, step: 10)
        let before = store.commitCounts.transactions
        #expect(Jobs.Runner.advance([a, b], in: store) == [a])
        #expect(store.commitCounts.transactions == before + 1)
        #expect(Self.current(store, a) == 4)
        #expect(Self.current(store, b) == 10)
        #expect(store.state[Jobs.jobs][b].map { Jobs.jobs.representation(of: $0, in: store.state).string }?.contains(#""isComplete":true"#) == true)
    }
}
