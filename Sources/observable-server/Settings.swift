import ArgumentParser
import FoundationEssentials

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
    @Option(help: "SQLite database file (env OBSERVABLE_DATABASE; default ./data/observable.sqlite).")
    var database: String?

    var databasePath: String { setting(database, "OBSERVABLE_DATABASE") ?? "./data/observable.sqlite" }
}
