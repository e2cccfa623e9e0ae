import ArgumentParser
import FoundationEssentials
import ModelStore
import ModelStoreDatabases
#if canImport(Glibc)
import Glibc
#endif

/// A setting given by flag, else by its `OBSERVABLE_…` environment variable,
/// else its default.
func setting<T: LosslessStringConvertible>(_ flag: T?, _ variable: String, default value: T) throws -> T {
    if let flag { return flag }
    if let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty {
        guard let parsed = T(text) else { throw ValidationError("\(variable)=\(text) is not a valid value") }
        return parsed
    }
    return value
}

func setting(_ flag: String?, _ variable: String) -> String? {
    if let flag { return flag }
    if let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty { return text }
    return nil
}

/// Options shared by `serve` and `migrate`.
struct StoreOptions: ParsableArguments {
    @Option(help: "SQLite database file, or postgres://USER[:PASSWORD]@HOST[:PORT]/DB for a database several instances share (env OBSERVABLE_DATABASE; default ./data/observable.sqlite).")
    var database: String?

    /// The database named, checked: a URL of another scheme than
    /// `postgres://` is refused (exit 64), never taken for a file name.
    func databaseName() throws -> String {
        let name = setting(database, "OBSERVABLE_DATABASE") ?? "./data/observable.sqlite"
        do {
            _ = try StoreDatabase(name)
        } catch {
            let message = Array("observable-server: \(error)\n".utf8)
            _ = write(2, message, message.count)
            throw ExitCode(64)
        }
        return name
    }
}
