import Foundation
import SQLiteStore
import Testing

@Suite struct StatementTests {
    /// Text is bound with its byte count: empty text stays text, NUL and
    /// multi-byte characters stay whole, small and large strings alike.
    @Test(arguments: ["", "a", "a\u{0}b", "é🍩", String(repeating: "long text ", count: 200)])
    func textIsStoredExactly(text: String) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("statement-\(UUID().uuidString).sqlite").path
        let database = try Database(path: path)
        try database.execute("CREATE TABLE t (v TEXT)")
        try database.execute("INSERT INTO t (v) VALUES (?)", [.text(text)])
        let row = try #require(try database.rows("SELECT v, typeof(v), length(CAST(v AS BLOB)) FROM t").first)
        #expect(row[0] == .text(text))
        #expect(row[1] == .text("text"))
        #expect(row[2] == .integer(Int64(text.utf8.count)))
    }
}
