import Foundation
import Testing
import TestSupport

/// The throwaway PostgreSQL server the tests use: it starts, makes separate
/// databases, stops, starts again with its data, and leaves nothing behind.
@Suite struct PostgresServerTests {
    /// The database name at the end of a postgres:// URL.
    func databaseName(_ url: String) -> String {
        String(url.split(separator: "?").first?.split(separator: "/").last ?? "")
    }

    func query(_ url: String, _ sql: String) throws -> String {
        let result = try TestPostgres.psql(url, sql)
        #expect(result.status == 0, "psql \(url) -c \(sql): \(result.output)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func startsMakesDatabasesStopsAndStartsAgain() throws {
        let server = try PostgresServer()
        let first = try server.createDatabase()
        let second = try server.createDatabase()
        #expect(first != second)
        for url in [first, second] {
            #expect(url.hasPrefix("postgres://postgres@127.0.0.1:\(server.port)/"))
            #expect(try query(url, "SELECT 1") == "1")
            #expect(try query(url, "SELECT current_database()") == databaseName(url))
        }
        #expect(try query(server.adminURL, "SHOW max_connections") == "300")
        #expect(try query(server.adminURL, "SHOW fsync") == "off")
        _ = try query(first, "CREATE TABLE kept (value int); INSERT INTO kept VALUES (42)")
        // The databases are separate.
        #expect(try TestPostgres.psql(second, "SELECT value FROM kept").status != 0)

        try server.stop()
        let refused = try TestPostgres.psql(first, "SELECT 1")
        #expect(refused.status != 0)
        #expect(refused.output.contains("Connection refused") || refused.output.contains("could not connect"), "\(refused.output)")

        try server.start()
        #expect(try query(first, "SELECT 1") == "1")
        #expect(try query(first, "SELECT value FROM kept") == "42")
        #expect(try query(second, "SELECT 1") == "1")

        let pid = try #require(pid_t(try String(contentsOfFile: server.folder + "/data/postmaster.pid", encoding: .utf8)
            .split(separator: "\n").first ?? ""))
        server.shutdown()
        #expect(!FileManager.default.fileExists(atPath: server.folder))
        #expect(try TestPostgres.psql(first, "SELECT 1").status != 0)
        // The postmaster is gone, or at most a zombie waiting for its parent to reap it.
        let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?
            .split(separator: ")").last?.split(separator: " ").first
        #expect(state == nil || state == "Z", "postmaster \(pid) is still in state \(state ?? "")")
    }

    @Test func freshDatabaseURLsAreDistinctAndWork() throws {
        let urls = try (0..<3).map { _ in try TestPostgres.freshDatabaseURL() }
        #expect(Set(urls).count == urls.count)
        for url in urls {
            #expect(try query(url, "SELECT current_database()") == databaseName(url))
            // Each starts empty.
            #expect(try query(url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == "0")
        }
    }

    @Test func serversAreIndependent() throws {
        let one = try PostgresServer()
        let two = try PostgresServer()
        #expect(one.port != two.port)
        #expect(one.folder != two.folder)
        try one.stop()
        #expect(try query(two.createDatabase(), "SELECT 1") == "1")
    }
}
