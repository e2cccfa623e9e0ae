internal import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// The rows of one result, read in place from libpq's result.
public final class Rows: @unchecked Sendable {
    private let result: OpaquePointer

    init(_ result: OpaquePointer) {
        self.result = result
    }

    deinit {
        PQclear(result)
    }

    public var count: Int { Int(PQntuples(result)) }
    public var columns: Int { Int(PQnfields(result)) }

    /// Rows that an `INSERT`, `UPDATE` or `DELETE` touched.
    public var affected: Int64 { Int64(String(cString: PQcmdTuples(result))) ?? 0 }

    public func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(result, Int32(row), Int32(column)) == 1
    }

    public func string(_ row: Int, _ column: Int) -> String? {
        guard !isNull(row, column) else { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    public func int64(_ row: Int, _ column: Int) -> Int64? {
        string(row, column).flatMap { Int64($0) }
    }

    public func double(_ row: Int, _ column: Int) -> Double? {
        string(row, column).flatMap { Double($0) }
    }
}
