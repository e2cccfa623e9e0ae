import Foundation
import PackagePlugin

/// Builds the repository's files into the target it is applied to:
/// `docs/openapi.yaml`, the files of `web/` and the `NNNN_name.sql` files of
/// `migrations/`, through the `embed-files` tool, which writes them as Swift
/// source.
///
/// The inputs of the command are the document, the two folders and every
/// file in them: editing a file rebuilds, and so does adding or removing one,
/// since that changes its folder. The tool lists the folders itself when it
/// runs, because SwiftPM asks this plugin for its commands only when it plans
/// the build again (after a change to Package.swift or to a target's list of
/// files); until then a file added meanwhile is embedded but its later edits
/// are not seen, and a file removed meanwhile is reported missing.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let openAPI = root.appending(path: "docs/openapi.yaml")
        let web = root.appending(path: "web")
        let migrations = root.appending(path: "migrations")
        let output = context.pluginWorkDirectoryURL.appending(path: "Embedded+Files.swift")
        return [
            .buildCommand(
                displayName: "Embedding the OpenAPI document, web and migrations in \(target.name)",
                executable: try context.tool(named: "embed-files").url,
                arguments: [output.path, "--openapi", openAPI.path, "--web", web.path, "--migrations", migrations.path],
                inputFiles: [openAPI, web, migrations] + (try files(in: web)) + (try files(in: migrations)),
                outputFiles: [output]
            ),
        ]
    }

    /// The files of `folder` that are not hidden (editors keep their swap
    /// files there, and a vanished input would fail the build).
    func files(in folder: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { !$0.hasPrefix(".") }
            .sorted()
            .map { folder.appending(path: $0) }
    }
}
