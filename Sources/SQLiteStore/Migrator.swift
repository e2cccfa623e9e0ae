import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Applies the numbered SQL files of a folder (`0001_init.sql`, …) in order,
/// each in its own transaction, and records each in `schema_migrations`.
public struct Migrator {
    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    public enum MigratorError: Error, CustomStringConvertible {
        case folderMissing(String)
        case badFileName(String)
        case duplicateVersion(Int)

        public var description: String {
            switch self {
            case .folderMissing(let path): return "migrations folder not found: \(path)"
            case .badFileName(let name): return "migration file name must look like NNNN_name.sql: \(name)"
            case .duplicateVersion(let v): return "two migrations share version \(v)"
            }
        }
    }

    public let migrations: [Migration]

    /// Reads every `NNNN_name.sql` file of `folder`, sorted by number.
    public init(folder: String) throws {
        guard Self.isFolder(folder) else {
            throw MigratorError.folderMissing(folder)
        }
        var found: [Migration] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder) where file.hasSuffix(".sql") {
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw MigratorError.badFileName(file)
            }
            let sql = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            found.append(Migration(version: version, name: String(stem), sql: sql))
        }
        found.sort { $0.version < $1.version }
        for (a, b) in zip(found, found.dropFirst()) where a.version == b.version {
            throw MigratorError.duplicateVersion(a.version)
        }
        migrations = found
    }

    /// Applies the migrations not yet recorded; returns the names applied.
    @discardableResult
    public func migrate(_ database: Database) throws -> [String] {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
            )
            """)
        let applied = Set(try database.rows("SELECT version FROM schema_migrations").compactMap { $0[0].int64 })
        var names: [String] = []
        for migration in migrations where !applied.contains(Int64(migration.version)) {
            try database.transaction {
                try database.execute(migration.sql)
                try database.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name)])
            }
            names.append(migration.name)
        }
        return names
    }

    static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The running executable's path (found through `/proc/self/exe`, so a
    /// binary started by bare name through `PATH` is found too).
    public static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Finds the migrations folder: `explicit` when given; otherwise
    /// `./migrations`, then a `migrations` or `share/observable-server/migrations`
    /// folder beside the executable or in any folder above it.
    public static func locateFolder(explicit: String?, executablePath: String = Migrator.executablePath) -> String? {
        if let explicit { return explicit }
        let fm = FileManager.default
        let isFolder = Self.isFolder
        let cwd = fm.currentDirectoryPath + "/migrations"
        if isFolder(cwd) { return cwd }
        var url = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath().deletingLastPathComponent()
        while url.path != "/" && !url.path.isEmpty {
            for candidate in ["migrations", "share/observable-server/migrations"] {
                let path = url.appendingPathComponent(candidate).path
                if isFolder(path) { return path }
            }
            url = url.deletingLastPathComponent()
        }
        return nil
    }
}
