import EmbeddedFiles
import Foundation
import Testing

/// What the build embedded is what the repository holds, byte for byte, with
/// each file's SHA-256 as `sha256sum` computes it. A difference means the
/// build is stale or the generated source changed some byte.
@Suite struct EmbeddedFilesTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(path)))
    }

    /// The names in `folder` that are not hidden and end with `suffix`, sorted.
    static func names(in folder: String, endingWith suffix: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
            .filter { !$0.hasPrefix(".") && $0.hasSuffix(suffix) }
            .sorted()
    }

    /// `sha256sum`'s digests of `paths`, in order.
    static func sha256sum(_ paths: [String]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = paths.map { root.appendingPathComponent($0).path }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").map { String($0.prefix(64)) }
    }

    @Test func openAPIDocumentIsDocsOpenAPIYAML() throws {
        let document = Embedded.openAPIDocument
        #expect(document.name == "openapi.yaml")
        #expect(document.bytes == (try Self.bytes("docs/openapi.yaml")))
        #expect(document.sha256 == (try Self.sha256sum(["docs/openapi.yaml"])).first)
    }

    @Test func webFilesAreTheFilesOfWeb() throws {
        let files = Embedded.webFiles
        #expect(files.map(\.name) == (try Self.names(in: "web")))
        for file in files {
            #expect(file.bytes == (try Self.bytes("web/" + file.name)), "web/\(file.name)")
        }
        #expect(files.map(\.sha256) == (try Self.sha256sum(files.map { "web/" + $0.name })))
    }

    @Test func migrationsAreTheSQLFilesOfMigrationsInOrder() throws {
        let files = Embedded.migrations
        #expect(!files.isEmpty)
        #expect(files.map(\.name) == (try Self.names(in: "migrations", endingWith: ".sql")))
        for file in files {
            #expect(file.bytes == (try Self.bytes("migrations/" + file.name)), "migrations/\(file.name)")
        }
        #expect(files.map(\.sha256) == (try Self.sha256sum(files.map { "migrations/" + $0.name })))
    }
}
