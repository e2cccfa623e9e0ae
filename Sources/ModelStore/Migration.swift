/// One numbered SQL migration (`0001_init.sql`, …): the rule that names
/// them, which each engine applies its own dialect's files by.
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String

    /// The models' tables it changes, when its first line names them
    /// (`-- tables: donuts, orders`): it runs where they all are, and is
    /// recorded without running where one is not, as in a new database,
    /// where that table is then made from its declaration as it is now.
    package var tables: [String] {
        let prefix = "-- tables:"
        guard let first = sql.split(separator: "\n", maxSplits: 1).first, first.hasPrefix(prefix) else { return [] }
        return first.dropFirst(prefix.count).split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }.filter { !$0.isEmpty }
    }

    package enum FileError: Error, CustomStringConvertible {
        case badFileName(String)
        case duplicateVersion(Int)

        package var description: String {
            switch self {
            case .badFileName(let name): return "migration file name must look like NNNN_name.sql: \(name)"
            case .duplicateVersion(let v): return "two migrations share version \(v)"
            }
        }
    }

    /// `NNNN_name.sql` files, given by name and text, sorted by number.
    package static func ordered(_ files: [(name: String, sql: String)]) throws -> [Migration] {
        var found: [Migration] = []
        for (file, sql) in files {
            guard file.hasSuffix(".sql") else { throw FileError.badFileName(file) }
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw FileError.badFileName(file)
            }
            found.append(Migration(version: version, name: String(stem), sql: sql))
        }
        found.sort { $0.version < $1.version }
        for (a, b) in zip(found, found.dropFirst()) where a.version == b.version {
            throw FileError.duplicateVersion(a.version)
        }
        return found
    }
}
