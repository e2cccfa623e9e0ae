import Foundation
import Testing
import TestSupport

/// The built `observable-server` executable run as a child process, for
/// what needs a real process: restarts, `kill -9`, signals.
final class ServerProcess {
    static var executable: URL {
        // The test bundle and the executable are built into the same folder.
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("observable-server")
    }

    let process = Process()
    let logPath: String
    private(set) var port: UInt16 = 0
    var client: TestClient { TestClient(port: port) }

    /// Starts the server on a free loopback port with its database in `folder`
    /// and waits until it listens, or only until its log shows `marker`.
    /// `database` is the folder's own (`TestEngine.database(for:)`) unless given.
    init(folder: String, database: String? = nil, arguments: [String] = [], waitingFor marker: String? = nil) throws {
        logPath = folder + "/server-\(UUID().uuidString).log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = Self.executable
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--database", try database ?? TestEngine.database(for: folder)]
            + arguments
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardError = log
        process.standardOutput = log
        try process.run()
        var started = false
        // A marker is looked for often: a test signals the server the moment it shows.
        _ = try? waitUntil(timeout: 20, every: marker == nil ? 0.01 : 0.001) { [process, logPath] in
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let marker {
                started = text.contains(marker)
            } else if let range = text.range(of: "listening on 127.0.0.1:"), let port = UInt16(text[range.upperBound...].prefix { $0.isNumber }) {
                self.port = port
                started = true
            }
            return started || !process.isRunning
        }
        guard started else {
            process.terminate()
            throw TestHTTPError.io("server did not start: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
        }
    }

    /// Sends `signal` and waits for the process to exit; returns its status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, within seconds: Double = 10) -> Int32? {
        kill(process.processIdentifier, signal)
        _ = try? waitUntil(timeout: seconds) { [process] in !process.isRunning }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
