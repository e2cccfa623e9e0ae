import Foundation
@testable import ModelStoreSQLite
import PostgresClient
import SQLiteStore
import TestSupport

/// The database engine the end-to-end suite runs on: SQLite by default,
/// PostgreSQL (a throwaway server of its own) with
/// `OBSERVABLE_TEST_ENGINE=postgres`. A test names its database by its
/// folder, so that a restart finds the same one.
enum TestEngine {
    static let isPostgres = ProcessInfo.processInfo.environment["OBSERVABLE_TEST_ENGINE"] == "postgres"

    /// The database of the test folder `folder`: its SQLite file, or the
    /// PostgreSQL database made for it the first time it is asked for.
    static func database(for folder: String) throws -> String {
        guard isPostgres else { return folder + "/observable.sqlite" }
        let file = folder + "/postgres-url"
        if let url = try? String(contentsOfFile: file, encoding: .utf8) { return url }
        let url = try TestPostgres.freshDatabaseURL()
        try url.write(toFile: file, atomically: true, encoding: .utf8)
        return url
    }

    /// Runs `sql` (one statement or more) on the database of `folder`.
    static func execute(_ sql: String, folder: String) throws {
        if isPostgres {
            try PostgresConnection(url: try database(for: folder)).connection.execute(sql)
            return
        }
        let database = try SQLiteStore.Database(path: folder + "/observable.sqlite")
        defer { database.close() }
        try database.execute(sql)
    }

    /// The first column of the first row of `sql`, asked of the database of `folder`.
    static func integer(_ sql: String, folder: String) throws -> Int64? {
        if isPostgres {
            return try PostgresConnection(url: try database(for: folder)).integer(sql)
        }
        let database = try SQLiteStore.Database(path: folder + "/observable.sqlite")
        defer { database.close() }
        return try database.rows(sql).first?[0].int64
    }
}

extension TestEngine {
    /// The database's own consistency check, `ok` when sound: SQLite's
    /// integrity check, or on PostgreSQL that the commit order's seq is the
    /// change log's newest.
    static func integrityCheck(folder: String) throws -> String {
        if isPostgres {
            let clock = try integer("SELECT seq FROM observable_clock", folder: folder)
            let newest = try integer("SELECT COALESCE(MAX(seq), 0) FROM changes", folder: folder)
            return clock == newest ? "ok" : "clock at \(clock ?? -1), change log at \(newest ?? -1)"
        }
        let database = try SQLiteStore.Database(path: folder + "/observable.sqlite")
        defer { database.close() }
        return try database.integrityCheck()
    }
}

/// A connection of the tests' own, to look inside a PostgreSQL database.
struct PostgresConnection {
    let connection: PostgresClient.Connection

    init(url: String) throws {
        connection = try PostgresClient.Connection(url: url, applicationName: "observable-tests")
    }

    func integer(_ sql: String) throws -> Int64? {
        try connection.query(sql).int64(0, 0)
    }

    func text(_ sql: String) throws -> String? {
        let rows = try connection.query(sql)
        return rows.count > 0 ? rows.string(0, 0) : nil
    }
}

extension TestEngine {
    /// The paths stored as read by `observer`, whether they still count or
    /// not: on PostgreSQL its rows of `observer_reads`; on SQLite its rows
    /// of `observer_read_sets` and its entries in `observer_read_batches`,
    /// each set of keys named as `read_shapes` holds it.
    static func storedReadPaths(of observer: String, folder: String) throws -> [String] {
        if isPostgres {
            let connection = try PostgresClient.Connection(url: try database(for: folder), applicationName: "observable-tests")
            let rows = try connection.query("SELECT path FROM observer_reads WHERE observer_id = '\(observer)' ORDER BY path")
            return (0..<rows.count).compactMap { rows.string($0, 0) }
        }
        let database = try SQLiteStore.Database(path: folder + "/observable.sqlite")
        defer { database.close() }
        var shapes: [Int64: [String]] = [:]
        for row in try database.rows("SELECT id, paths FROM read_shapes") {
            shapes[row[0].int64 ?? -1] = (row[1].string ?? "").split(separator: "\n").map(String.init)
        }
        var paths: [String] = []
        for row in try database.rows("SELECT shape_id FROM observer_read_sets WHERE observer_id = ?", [.text(observer)]) {
            paths += shapes[row[0].int64 ?? -1] ?? []
        }
        for row in try database.rows("SELECT reads FROM observer_read_batches ORDER BY id") {
            ReadBatch.forEach(in: row[0].bytes ?? []) { id, _, shape in
                if id == observer { paths += shapes[shape] ?? ["(set \(shape) missing)"] }
            }
        }
        return paths.sorted()
    }
}
