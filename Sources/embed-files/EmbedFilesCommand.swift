import Digest
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Writes the Swift source of the `EmbeddedFiles` module's values: the
/// OpenAPI document, the live page's files and the migrations, each as its
/// bytes and their SHA-256. The `EmbedFiles` plugin runs it at build time:
///
///     embed-files OUTPUT --openapi FILE --web FOLDER --migrations FOLDER
///
/// It lists the folders itself, so what it embeds is what they hold now.
@main
struct EmbedFilesCommand {
    static func main() {
        do {
            let options = try options(Array(CommandLine.arguments.dropFirst()))
            let web = try files(in: options.web) { _ in true }
            guard web.contains(where: { $0.name == "index.html" }) else {
                throw Failure(description: "\(options.web)/index.html is missing")
            }
            let source = SwiftSource.render(
                openAPIDocument: try read(options.openAPI),
                webFiles: web,
                migrations: try files(in: options.migrations) { $0.hasSuffix(".sql") })
            try Data(source.utf8).write(to: URL(fileURLWithPath: options.output))
        } catch {
            // The build shows the tool's standard error under the failed command.
            let message = Array("embed-files: \(error)\n".utf8)
            _ = write(2, message, message.count)
            exit(1)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Options {
        var output: String
        var openAPI: String
        var web: String
        var migrations: String
    }

    static func options(_ arguments: [String]) throws -> Options {
        let usage = Failure(description: "usage: embed-files OUTPUT --openapi FILE --web FOLDER --migrations FOLDER")
        guard arguments.count == 7, !arguments[0].hasPrefix("--") else { throw usage }
        var values: [String: String] = [:]
        for index in stride(from: 1, to: arguments.count, by: 2) {
            values[arguments[index]] = arguments[index + 1]
        }
        guard let openAPI = values["--openapi"], let web = values["--web"], let migrations = values["--migrations"] else {
            throw usage
        }
        return Options(output: arguments[0], openAPI: openAPI, web: web, migrations: migrations)
    }

    /// The regular files of `folder` that are not hidden and whose names
    /// `include` accepts.
    static func files(in folder: String, where include: (String) -> Bool) throws -> [SwiftSource.File] {
        try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { !$0.hasPrefix(".") && include($0) }
            .map { folder + "/" + $0 }
            .filter { path in
                var info = stat()
                return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
            }
            .map(read)
    }

    static func read(_ path: String) throws -> SwiftSource.File {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return SwiftSource.File(name: name, bytes: bytes, sha256: SHA256.hex(bytes))
    }
}
