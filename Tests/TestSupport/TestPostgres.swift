import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Something about a throwaway PostgreSQL server went wrong; the description
/// carries the command and what it printed.
public struct TestPostgresError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// What a finished command left: its exit status and its standard output
/// and standard error, interleaved.
public struct PostgresCommandResult: Sendable {
    /// The command line, for messages.
    public let command: String
    public let status: Int32
    public let output: String
}

/// A throwaway PostgreSQL server for tests: its own cluster in a temporary
/// folder, listening on a free port on 127.0.0.1, trusting every local
/// connection. The server runs as the `postgres` user when the tests run as
/// root (PostgreSQL refuses to run as root), as the current user otherwise.
/// `shutdown()`, `deinit` and process exit stop it and remove its folder; a
/// small watchdog process does the same if the test process dies without
/// exiting (a crash or a signal).
public final class PostgresServer: @unchecked Sendable {
    /// The port it listens on, the same across `stop()` and `start()`.
    public let port: UInt16
    /// The temporary folder holding the cluster (`data/`), its log and its socket.
    public let folder: String
    private let cluster: Cluster
    private let lock = NSLock()
    private var isShutDown = false
    private let watchdog: pid_t?

    /// Creates a cluster in a new temporary folder and starts it on a free port.
    public init() throws {
        let cluster = try Cluster.create()
        // From here on, the folder is the watchdog's to remove should this process die.
        let watchdog = cluster.startWatchdog()
        do {
            try PostgresTools.check(PostgresTools.run(
                PostgresTools.path("initdb"),
                ["-D", cluster.dataDirectory, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C",
                 "--no-sync", "--no-instructions"],
                asServerUser: true, in: cluster.folder))
            // A free port can be taken between looking and binding: try another then.
            var started: UInt16?
            for attempt in 1... {
                let port = try PostgresTools.freePort()
                do {
                    try cluster.start(port: port)
                    started = port
                    break
                } catch let error as TestPostgresError where attempt < 5 && error.description.contains("already in use") {
                    continue
                }
            }
            port = started!
        } catch {
            cluster.terminate()
            PostgresTools.end(watchdog)
            throw error
        }
        self.cluster = cluster
        self.watchdog = watchdog
        folder = cluster.folder
        Cleanup.register(cluster, watchdog: watchdog)
    }

    /// The URL of the `postgres` database, for administration.
    public var adminURL: String { url(database: "postgres") }

    /// The URL of `database` on this server.
    public func url(database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)" }

    /// Stops the server (fast shutdown: open connections are ended) and waits
    /// until it is down. The cluster stays, for `start()`.
    public func stop() throws {
        try PostgresTools.check(PostgresTools.run(
            PostgresTools.path("pg_ctl"), ["-D", cluster.dataDirectory, "-m", "fast", "-w", "-t", "60", "stop"],
            asServerUser: true, in: cluster.folder))
    }

    /// Starts the stopped server again, on the same port and cluster, and
    /// waits until it accepts connections.
    public func start() throws {
        try cluster.start(port: port)
    }

    /// Creates a new, uniquely named database and returns its URL.
    public func createDatabase() throws -> String {
        try PostgresTools.createDatabase(through: adminURL)
    }

    /// Stops the server at once and removes its folder. Later calls do nothing.
    public func shutdown() {
        lock.lock()
        defer { lock.unlock() }
        guard !isShutDown else { return }
        isShutDown = true
        Cleanup.unregister(cluster)
        cluster.terminate()
        PostgresTools.end(watchdog)
    }

    deinit { shutdown() }
}

/// Fresh databases for tests, on one PostgreSQL server the whole test process
/// shares, started the first time one is asked for. With the environment
/// variable `OBSERVABLE_TEST_POSTGRES_ADMIN_URL` set (see
/// `scripts/with-postgres`), the databases are made on the server it names,
/// through it, and no server is started.
public enum TestPostgres {
    public static let adminURLVariable = "OBSERVABLE_TEST_POSTGRES_ADMIN_URL"

    // A static let is initialized once, thread-safely, on first use.
    private static let shared: Result<PostgresServer, any Error> = Result { try PostgresServer() }

    /// The URL of a new, empty database no one else uses.
    public static func freshDatabaseURL() throws -> String {
        if let admin = ProcessInfo.processInfo.environment[adminURLVariable], !admin.isEmpty {
            return try PostgresTools.createDatabase(through: admin)
        }
        return try shared.get().createDatabase()
    }

    /// Runs `sql` with `psql` against the database at `url` (unaligned, tuples
    /// only, stopping at the first error) and returns what it printed. Throws
    /// only when `psql` cannot be run.
    public static func psql(_ url: String, _ sql: String) throws -> PostgresCommandResult {
        try PostgresTools.run(
            PostgresTools.path("psql"), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
            asServerUser: false, in: nil)
    }
}

/// The cluster's paths, and starting and stopping it. A value, so the
/// process-exit cleanup can hold it without holding the server.
private struct Cluster: Sendable {
    let folder: String
    var dataDirectory: String { folder + "/data" }
    var logPath: String { folder + "/postgres.log" }

    /// A new temporary folder, owned by the user the server runs as.
    static func create() throws -> Cluster {
        let asRoot = geteuid() == 0
        // The postgres user must be able to reach the folder, whatever TMPDIR is.
        let base = asRoot ? "/tmp" : FileManager.default.temporaryDirectory.path
        var template = Array((base + "/observable-postgres-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestPostgresError("cannot create a temporary folder in \(base): \(String(cString: strerror(errno)))")
        }
        let folder = String(cString: made)
        if asRoot {
            guard let user = getpwnam("postgres") else {
                try? FileManager.default.removeItem(atPath: folder)
                throw TestPostgresError("running as root, but there is no postgres user to run PostgreSQL as (install the postgresql package)")
            }
            guard chown(folder, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(atPath: folder)
                throw TestPostgresError("cannot give \(folder) to the postgres user: \(reason)")
            }
        }
        return Cluster(folder: folder)
    }

    func start(port: UInt16) throws {
        let options = "-p \(port) -k '\(folder)' -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
        let result = try PostgresTools.run(
            PostgresTools.path("pg_ctl"),
            ["-D", dataDirectory, "-l", logPath, "-o", options, "-w", "-t", "60", "start"],
            asServerUser: true, in: folder)
        guard result.status == 0 else {
            throw TestPostgresError("""
                PostgreSQL did not start on port \(port) (pg_ctl exited with \(result.status)):
                \(result.output)
                last lines of \(logPath):
                \(logTail())
                """)
        }
    }

    func logTail(lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)"
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Stops the server at once, if it runs, and removes the folder. Signals
    /// the postmaster directly (an immediate shutdown), so it needs no child
    /// process and works at process exit.
    func terminate() {
        let pidFile = dataDirectory + "/postmaster.pid"
        if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
           let pid = pid_t(text.split(separator: "\n").first ?? ""), pid > 0
        {
            kill(pid, SIGQUIT)
            // The postmaster removes its pid file once it and its children are gone.
            let deadline = Date().addingTimeInterval(10)
            while FileManager.default.fileExists(atPath: pidFile), kill(pid, 0) == 0, Date() < deadline {
                usleep(10_000)
            }
            if FileManager.default.fileExists(atPath: pidFile), kill(pid, 0) == 0 {
                kill(pid, SIGKILL)
            }
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A shell that waits for this process to end and then stops the server
    /// and removes the folder: the cleanup for when `atexit` does not run (a
    /// crash, a signal). Its process id, to end it when the server is shut down.
    func startWatchdog() -> pid_t? {
        let script = """
            while kill -0 "$1" 2>/dev/null; do sleep 1; done
            pid=$(head -n 1 "$2/data/postmaster.pid" 2>/dev/null) && kill -QUIT "$pid" 2>/dev/null
            i=0
            while [ -e "$2/data/postmaster.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
            rm -rf "$2"
            """
        return try? PostgresTools.spawn(
            ["/bin/sh", "-c", script, "postgres-watchdog", String(getpid()), folder],
            environment: ProcessInfo.processInfo.environment, directory: "/", output: nil)
    }
}

/// The servers still running, stopped when the process exits, with their watchdogs.
private enum Cleanup {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var clusters: [String: (cluster: Cluster, watchdog: pid_t?)] = [:]
    private static let installAtExit: Void = {
        atexit { Cleanup.terminateAll() }
    }()

    static func register(_ cluster: Cluster, watchdog: pid_t?) {
        _ = installAtExit
        lock.lock()
        clusters[cluster.folder] = (cluster, watchdog)
        lock.unlock()
    }

    static func unregister(_ cluster: Cluster) {
        lock.lock()
        clusters[cluster.folder] = nil
        lock.unlock()
    }

    static func terminateAll() {
        lock.lock()
        let all = clusters.values
        clusters = [:]
        lock.unlock()
        for (cluster, watchdog) in all {
            cluster.terminate()
            if let watchdog { kill(watchdog, SIGKILL) }
        }
    }
}

/// Finding and running the PostgreSQL programs.
/// A TCP port on 127.0.0.1 that nothing listens on just now.
public func freeLoopbackPort() throws -> UInt16 {
    try PostgresTools.freePort()
}

enum PostgresTools {
    /// The folder with the server programs: the highest version under
    /// /usr/lib/postgresql (Debian), else `pg_config --bindir`; nil to search PATH.
    static let binDirectory: String? = {
        let manager = FileManager.default
        let versions = ((try? manager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .filter { manager.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/initdb") }
            .sorted { $0.compare($1, options: .numeric) == .orderedDescending }
        if let highest = versions.first { return "/usr/lib/postgresql/\(highest)/bin" }
        if let pgConfig = searchPath("pg_config"),
           let result = try? run(pgConfig, ["--bindir"], asServerUser: false, in: nil), result.status == 0
        {
            let folder = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            if manager.isExecutableFile(atPath: folder + "/initdb") { return folder }
        }
        return nil
    }()

    static func path(_ tool: String) throws -> String {
        if let binDirectory, FileManager.default.isExecutableFile(atPath: binDirectory + "/" + tool) {
            return binDirectory + "/" + tool
        }
        if let found = searchPath(tool) { return found }
        throw TestPostgresError("cannot find the PostgreSQL program \(tool) in /usr/lib/postgresql/*/bin, pg_config --bindir or PATH (scripts/install-deps installs postgresql)")
    }

    /// A TCP port on 127.0.0.1 that nothing listens on just now.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestPostgresError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw TestPostgresError("cannot find a free port: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    static func searchPath(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `executable` and waits for it. As the server user, when root, it
    /// runs through `runuser -u postgres`. Output goes to a file, not a pipe,
    /// so a server the command leaves running cannot hold the wait up.
    static func run(_ executable: String, _ arguments: [String], asServerUser: Bool, in directory: String?) throws
        -> PostgresCommandResult
    {
        var command = [executable] + arguments
        if asServerUser, geteuid() == 0 {
            guard let runuser = ["/usr/sbin/runuser", "/sbin/runuser"].first(where: { FileManager.default.isExecutableFile(atPath: $0) })
                ?? searchPath("runuser")
            else { throw TestPostgresError("running as root, but runuser is missing to run \(executable) as postgres") }
            command = [runuser, "-u", "postgres", "--"] + command
        }
        // In the cluster's folder when there is one, so a crash leaves nothing outside it.
        let outputFolder = directory.map { URL(fileURLWithPath: $0) } ?? FileManager.default.temporaryDirectory
        let outputPath = outputFolder.appendingPathComponent("postgres-command-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        // Only what is given here decides where and how to connect.
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["LC_ALL"] = "C"
        environment["PGCONNECT_TIMEOUT"] = "10"
        let pid = try spawn(command, environment: environment, directory: directory, output: outputPath)
        let status = wait(for: pid)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return PostgresCommandResult(command: command.joined(separator: " "), status: status, output: text)
    }

    /// Starts `command` with only standard input (/dev/null), output and error
    /// (both to `output`, or /dev/null) open, in a process group of its own.
    ///
    /// Not `Process`: on Linux it learns that a child ended when a socket the
    /// child inherits closes, and `pg_ctl start` leaves the server holding it,
    /// so waiting for `pg_ctl` would wait for the server. Closing every other
    /// descriptor here also keeps the server from holding descriptors that
    /// other tests open meanwhile.
    static func spawn(_ command: [String], environment: [String: String], directory: String?, output: String?) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Both are GNU extensions the Glibc module does not show; looked up at run time.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let closeFrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            throw TestPostgresError("this C library lacks posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later has it)")
        }
        _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&actions, 3)
        if let directory {
            typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
            if let addChdir = dlsym(nil, "posix_spawn_file_actions_addchdir_np") {
                _ = unsafeBitCast(addChdir, to: AddChdir.self)(&actions, directory)
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, command[0], &actions, &attributes, argv, envp)
        guard rc == 0 else {
            throw TestPostgresError("cannot run \(command.joined(separator: " ")): \(String(cString: strerror(rc)))")
        }
        return pid
    }

    /// Kills the child `pid`, if any, and reaps it.
    static func end(_ pid: pid_t?) {
        guard let pid else { return }
        kill(pid, SIGKILL)
        _ = wait(for: pid)
    }

    /// Waits for the child `pid` to end; its exit status, or 128 + the signal that ended it.
    static func wait(for pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Throws, with the output, unless the command succeeded.
    static func check(_ result: PostgresCommandResult, _ what: @autoclosure () -> String? = nil) throws {
        guard result.status == 0 else {
            throw TestPostgresError("\(what() ?? result.command) failed with exit status \(result.status):\n\(result.output)")
        }
    }

    /// Creates a uniquely named database through the server at `adminURL`
    /// and returns the same URL naming the new database.
    static func createDatabase(through adminURL: String) throws -> String {
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let result = try TestPostgres.psql(adminURL, "CREATE DATABASE \"\(name)\"")
        try check(result, "creating database \(name) through \(adminURL)")
        return try replaceDatabase(in: adminURL, with: name)
    }

    /// `url` with its path (the database name) replaced by `database`; the
    /// query, if any, is kept.
    static func replaceDatabase(in url: String, with database: String) throws -> String {
        guard let scheme = url.range(of: "://") else {
            throw TestPostgresError("\(url) is not a postgres:// URL")
        }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let query = rest[authorityEnd...].firstIndex(of: "?").map { String(rest[$0...]) } ?? ""
        return url[..<authorityEnd] + "/" + database + query
    }
}
