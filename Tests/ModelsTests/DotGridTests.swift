import ModelStore
@testable import Models
import Testing

@Suite struct DotGridTests {
    @Test(arguments: [("0", 0), ("7", 7), ("10", 10), ("999", 999)])
    func aPositionIsPlainDecimalDigits(segment: String, position: Int) {
        #expect(DotGrid.position(segment) == position)
    }

    /// One position has one URL: no sign, no leading zero, no other digits or spellings.
    @Test(arguments: ["", "01", "00", "-1", "+1", "1.0", "1e0", " 1", "1 ", "0x1", "١", "99999999999999999999"])
    func anythingElseNamesNoPosition(segment: String) {
        #expect(DotGrid.position(segment) == nil)
    }

    @Test func theSeedGridHasRaggedRowsInColumnOrder() throws {
        let store = try seedStore()
        defer { store.close() }
        let rows = DotGrid.rows(store.state)
        #expect(rows.map(\.count) == [3, 2, 4])
        for (index, row) in rows.enumerated() {
            #expect(row.map { $0.int("row") } == Array(repeating: Int64(index), count: row.count))
            #expect(row.map { $0.int("col") } == (0..<row.count).map(Int64.init))
        }
    }
}
