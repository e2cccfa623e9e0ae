import API
import Foundation
import HTTPServer
import Logging
import ModelStore
import Models

/// The repository's folder, found from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A fresh temporary folder.
func temporaryFolder() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("observable-test-" + UUID().uuidString).path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A real server on a loopback port with a real SQLite file, in this process.
final class TestServer {
    let folder: String
    let application: Application
    var client: TestClient { TestClient(port: application.port) }
    var port: UInt16 { application.port }
    var databasePath: String { folder + "/observable.sqlite" }

    init(folder: String = temporaryFolder(), configure: (inout Application.Configuration) -> Void = { _ in }) throws {
        self.folder = folder
        var configuration = Application.Configuration(
            store: Store.Configuration(database: try TestEngine.database(for: folder)))
        configuration.http.host = "127.0.0.1"
        configuration.http.port = 0
        configuration.http.threads = 2
        configuration.housekeepingInterval = 0.2
        configure(&configuration)
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        application = try Application(configuration: configuration, logger: logger)
        try application.start()
    }

    func stop() {
        application.stop()
    }

    deinit {
        application.stop()
    }
}

/// The default donuts' ids, from the first migration.
enum Seed {
    static let glazed = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
    static let chocolate = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002"
    static let strawberry = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003"
    static let maple = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0004"
}
