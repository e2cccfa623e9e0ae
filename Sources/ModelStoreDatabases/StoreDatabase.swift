import ModelStore

/// The database `Store.Configuration.database` names: a SQLite file of the
/// instance's own, or a PostgreSQL database that several instances share.
public enum StoreDatabase: Equatable, Sendable {
    case sqlite(path: String)
    case postgres(url: String)

    /// A `postgres://` or `postgresql://` URL, or a file path; any other
    /// URL scheme is refused rather than taken for a file name.
    public init(_ database: String) throws {
        let parts = database.split(separator: "://", maxSplits: 1)
        guard parts.count == 2, !parts[0].contains("/") else {
            self = .sqlite(path: database)
            return
        }
        let scheme = parts[0].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw ModelError(.badRequest, "unsupported database URL scheme \(scheme)://; use a file path or postgres://USER[:PASSWORD]@HOST[:PORT]/DB")
        }
        self = .postgres(url: database)
    }

    /// `database` with the password of a URL left out, for logs.
    public static func redacted(_ database: String) -> String {
        let parts = database.split(separator: "://", maxSplits: 1)
        guard parts.count == 2, let at = parts[1].lastIndex(of: "@"),
              let colon = parts[1][..<at].firstIndex(of: ":") else { return database }
        return parts[0] + "://" + parts[1][..<colon] + ":***" + parts[1][at...]
    }
}
