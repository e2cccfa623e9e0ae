import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The database the servers of a test share.
public enum Engine: String, CaseIterable, CustomTestStringConvertible, Sendable {
    /// One server on a SQLite file.
    case sqlite
    /// Two servers on one PostgreSQL database: the client talks to the
    /// first, the other writers to the second.
    case postgres

    public var testDescription: String { rawValue }
}

/// The built `observable-server` run as a child process on a fixed loopback
/// port, so that a restart comes back where the client looks for it.
public final class ServerInstance {
    public static var executable: URL {
        // The test bundle and the executable are built into the same folder.
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("observable-server")
    }

    public let process = Process()
    public let port: UInt16
    public let logPath: String

    public init(database: String, port: UInt16, folder: String, arguments: [String]) throws {
        self.port = port
        logPath = folder + "/server-\(port)-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = Self.executable
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "\(port)", "--database", database, "--log-level", "warning"]
            + arguments
        let logFile = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardError = logFile
        process.standardOutput = logFile
        try process.run()
        // Up when /healthz answers.
        let started = (try? waitUntil(timeout: 30, every: 0.02) { [process] in
            !process.isRunning || Raw.isHealthy(port: port)
        }) != nil && process.isRunning
        guard started else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestPostgresError("server did not start on \(port): \(log(of: logPath))")
        }
    }

    /// Sends `signal` and waits until the process is gone.
    public func stop(signal: Int32 = SIGTERM) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }

    deinit { stop(signal: SIGKILL) }
}

private func log(of path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

/// The servers of one test. The client always talks to `clientPort`; other
/// clients write through `writerPort` (the same server on SQLite, the
/// second instance on PostgreSQL).
public final class Deployment {
    public let engine: Engine
    public let folder: String
    public let database: String
    public let clientPort: UInt16
    public let arguments: [String]
    public private(set) var clientServer: ServerInstance?
    private var writerServer: ServerInstance?
    /// The client's server while it is away on another port (SQLite only).
    private var awayServer: ServerInstance?

    public init(_ engine: Engine, arguments: [String] = []) throws {
        self.engine = engine
        self.arguments = arguments
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("observable-client-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        database = engine == .postgres ? try TestPostgres.freshDatabaseURL() : folder + "/observable.sqlite"
        clientPort = try freeLoopbackPort()
        clientServer = try ServerInstance(database: database, port: clientPort, folder: folder, arguments: arguments)
        if engine == .postgres {
            writerServer = try ServerInstance(database: database, port: try freeLoopbackPort(), folder: folder, arguments: arguments)
        }
    }

    public var clientURL: URL { URL(string: "http://127.0.0.1:\(clientPort)")! }

    /// Where other clients write and read.
    public var writerPort: UInt16 { writerServer?.port ?? awayServer?.port ?? clientPort }

    /// Stops the client's server with `signal` and starts it again on its port.
    public func restartClientServer(signal: Int32) throws {
        clientServer?.stop(signal: signal)
        clientServer = nil
        clientServer = try ServerInstance(database: database, port: clientPort, folder: folder, arguments: arguments)
    }

    /// Sends `signal` to the client's server, leaving it be (SIGSTOP, SIGCONT);
    /// returns once a SIGSTOP has stopped it.
    public func signalClientServer(_ signal: Int32) {
        guard let process = clientServer?.process else { return }
        if signal == SIGSTOP {
            try? stopProcess(process.processIdentifier)
        } else {
            kill(process.processIdentifier, signal)
        }
    }

    /// Takes the client's server away: stopped on its port, the database
    /// still served to other writers (on SQLite, by a server on another port).
    public func takeClientServerAway() throws {
        clientServer?.stop()
        clientServer = nil
        if engine == .sqlite {
            awayServer = try ServerInstance(database: database, port: try freeLoopbackPort(), folder: folder, arguments: arguments)
        }
    }

    /// Brings the client's server back on its port.
    public func bringClientServerBack() throws {
        awayServer?.stop()
        awayServer = nil
        clientServer = try ServerInstance(database: database, port: clientPort, folder: folder, arguments: arguments)
    }

    /// Whether the database still holds the observer `id`; asked without
    /// using it (a read of it would keep it alive).
    public func observerExists(_ id: String) -> Bool {
        if engine == .postgres {
            let result = try? TestPostgres.psql(database, "SELECT count(*) FROM observers WHERE id = '\(id)'")
            return result?.output.trimmingCharacters(in: .whitespacesAndNewlines) != "0"
        }
        // The only observer of the server the writers use.
        let metrics = String(decoding: Raw.send("GET", port: writerPort, "/metrics").body, as: UTF8.self)
        return !metrics.contains("\nobservable_observers 0\n")
    }

    public func stopAll() {
        for server in [clientServer, writerServer, awayServer] { server?.stop(signal: SIGKILL) }
        clientServer = nil
        writerServer = nil
        awayServer = nil
        try? FileManager.default.removeItem(atPath: folder)
    }

    deinit { stopAll() }
}
