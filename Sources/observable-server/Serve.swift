import API
import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ModelStore
import ModelStoreDatabases
import Models

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations, make or check the models' tables, and serve HTTP (the default).")

    @OptionGroup var store: StoreOptions

    @Option(help: "Address to listen on (env OBSERVABLE_HOST; default 0.0.0.0).")
    var host: String?

    @Option(help: "Port to listen on; 0 picks a free one (env OBSERVABLE_PORT; default 8080).")
    var port: UInt16?

    @Option(help: "HTTP worker threads (env OBSERVABLE_THREADS; default: one fewer than the cores, at least 1).")
    var threads: Int?

    @Option(name: .customLong("max-body"), help: "Largest request body in bytes (env OBSERVABLE_MAX_BODY; default 1048576).")
    var maxBody: Int?

    @Option(name: .customLong("max-long-poll"), help: "Longest long-poll timeout in seconds (env OBSERVABLE_MAX_LONG_POLL; default 60).")
    var maxLongPoll: Int?

    @Option(help: "Seconds of silence after which an event stream gets a comment line (env OBSERVABLE_HEARTBEAT; default 15).")
    var heartbeat: Int?

    @Option(name: .customLong("connection-limit"), help: "Connections served at once (env OBSERVABLE_CONNECTION_LIMIT; default: as many as the open-descriptor limit allows, less 64).")
    var connectionLimit: Int?

    @Option(name: .customLong("max-connections-per-address"), help: "Connections one client address (an IPv6 client: its /64) may hold at once, parked long-polls and streams included; a new one beyond is 429 (env OBSERVABLE_MAX_CONNECTIONS_PER_ADDRESS; default: a quarter of the connection limit).")
    var maxConnectionsPerAddress: Int?

    @Option(name: .customLong("connection-memory"), help: "Bytes of memory per connection, which also bound a request's line plus headers (and 64 bytes per query parameter): 4096 to 1048576 (env OBSERVABLE_CONNECTION_MEMORY; default 8192).")
    var connectionMemory: Int?

    @Option(name: .customLong("idle-timeout"), help: "Seconds before an idle connection is closed (env OBSERVABLE_IDLE_TIMEOUT; default 30).")
    var idleTimeout: Int?

    @Option(name: .customLong("request-timeout"), help: "Seconds a client may take to send a request, head and body, from its first byte; one still arriving then is 408 and closed (env OBSERVABLE_REQUEST_TIMEOUT; default 20).")
    var requestTimeout: Int?

    @Option(name: .customLong("retain-changes"), help: "Change-log entries kept (env OBSERVABLE_RETAIN_CHANGES; default 100000).")
    var retainChanges: Int?
    @Option(name: .customLong("retain-changes-bytes"), help: "Most bytes the kept change-log entries may hold; the oldest go first past it (env OBSERVABLE_RETAIN_CHANGES_BYTES; default 67108864).")
    var retainChangesBytes: Int?

    @Option(name: .customLong("max-reads-per-observer"), help: "Most properties one observer may track; more is 422 (env OBSERVABLE_MAX_READS_PER_OBSERVER; default 100000).")
    var maxReadsPerObserver: Int?

    @OptionGroup(title: "Quotas") var quotas: QuotaOptions

    @Option(help: "SQLite synchronous mode, normal or full (env OBSERVABLE_SYNCHRONOUS; default normal).")
    var synchronous: String?

    @Option(name: .customLong("max-database-size"), help: "Largest size of the SQLite database file (512M, 2G); a write past it is 507, as on a full disk (env OBSERVABLE_MAX_DATABASE_SIZE; default: what the disk holds).")
    var maxDatabaseSize: ByteCount?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (env OBSERVABLE_LOG_LEVEL; default info).")
    var logLevel: String?

    func run() throws {
        // SIGTERM and SIGINT are blocked from the first line, in this thread and
        // so in every thread started later, and taken with `sigwait` once the
        // server runs: one that arrives while the database opens is kept
        // pending and stops the server as soon as it has started.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

        let levelName = setting(logLevel, "OBSERVABLE_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else { throw ValidationError("unknown log level \(levelName)") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "observable")
        logger.logLevel = level
        logger.info("observable-server starting, pid \(getpid())")

        var storeConfiguration = Store.Configuration(database: try store.databaseName())
        storeConfiguration.retainChanges = try setting(retainChanges, "OBSERVABLE_RETAIN_CHANGES", default: 100_000)
        storeConfiguration.retainChangesBytes = try setting(retainChangesBytes, "OBSERVABLE_RETAIN_CHANGES_BYTES", default: 64 << 20)
        storeConfiguration.maxReadsPerObserver = try setting(maxReadsPerObserver, "OBSERVABLE_MAX_READS_PER_OBSERVER", default: 100_000)
        if let size = maxDatabaseSize?.description ?? setting(nil, "OBSERVABLE_MAX_DATABASE_SIZE") {
            guard let bytes = ByteCount(size)?.bytes, bytes > 0 else { throw ValidationError("max-database-size: \(size) is not a size") }
            storeConfiguration.maxDatabaseBytes = bytes
        }
        switch (setting(synchronous, "OBSERVABLE_SYNCHRONOUS") ?? "normal").lowercased() {
        case "normal": storeConfiguration.durability = .processCrash
        case "full": storeConfiguration.durability = .powerLoss
        default: throw ValidationError("synchronous must be normal or full")
        }

        var configuration = Application.Configuration(store: storeConfiguration)
        configuration.http.host = setting(host, "OBSERVABLE_HOST") ?? "0.0.0.0"
        configuration.http.port = try setting(port, "OBSERVABLE_PORT", default: 8080)
        configuration.http.threads = try setting(threads, "OBSERVABLE_THREADS", default: configuration.http.threads)
        configuration.http.maxBody = try setting(maxBody, "OBSERVABLE_MAX_BODY", default: 1 << 20)
        // Each connection is a descriptor: as many as the process may open.
        let descriptors = raiseDescriptorLimit()
        configuration.http.connectionLimit = try setting(connectionLimit, "OBSERVABLE_CONNECTION_LIMIT", default: descriptors)
        if configuration.http.connectionLimit > descriptors {
            logger.warning("connection limit \(configuration.http.connectionLimit) lowered to \(descriptors): the open-descriptor limit allows no more")
            configuration.http.connectionLimit = descriptors
        }
        configuration.http.maxConnectionsPerAddress = try setting(
            maxConnectionsPerAddress, "OBSERVABLE_MAX_CONNECTIONS_PER_ADDRESS", default: configuration.http.connectionsPerAddress)
        configuration.http.connectionMemory = try setting(connectionMemory, "OBSERVABLE_CONNECTION_MEMORY", default: 8 * 1024)
        guard (4 * 1024...(1 << 20)).contains(configuration.http.connectionMemory) else {
            throw ValidationError("connection-memory must be between 4096 and 1048576")
        }
        configuration.http.idleTimeout = try setting(idleTimeout, "OBSERVABLE_IDLE_TIMEOUT", default: 30)
        configuration.http.requestTimeout = try setting(requestTimeout, "OBSERVABLE_REQUEST_TIMEOUT", default: 20)
        configuration.limits.maxLongPoll = try setting(maxLongPoll, "OBSERVABLE_MAX_LONG_POLL", default: 60)
        configuration.limits.defaultLongPoll = min(30, configuration.limits.maxLongPoll)
        let heartbeat = try setting(heartbeat, "OBSERVABLE_HEARTBEAT", default: 15)
        guard heartbeat >= 1 else { throw ValidationError("heartbeat must be positive") }
        configuration.http.heartbeat = Double(heartbeat)
        // Tokens come only from the environment: flags would show them in `ps`.
        let environment = ProcessInfo.processInfo.environment
        configuration.access = AccessPolicy(
            writeToken: environment["OBSERVABLE_TOKEN"], readToken: environment["OBSERVABLE_READ_TOKEN"],
            corsOrigins: (environment["OBSERVABLE_CORS_ORIGINS"] ?? "").split(separator: ",")
                .map { String($0.filter { !$0.isWhitespace }) }.filter { !$0.isEmpty })
        if let invalid = configuration.access.corsOrigins.first(where: { !AccessPolicy.isValidCORSOrigin($0) }) {
            throw ValidationError("OBSERVABLE_CORS_ORIGINS: \(invalid) is not an origin (scheme://host[:port]) or *")
        }
        if configuration.access.readToken != nil && configuration.access.writeToken == nil {
            throw ValidationError("OBSERVABLE_READ_TOKEN needs OBSERVABLE_TOKEN as well")
        }
        try quotas.apply(to: &configuration)
        guard configuration.http.threads >= 1, configuration.http.maxBody >= 1, configuration.limits.maxLongPoll >= 1,
              configuration.http.connectionLimit >= 1, configuration.http.connectionsPerAddress >= 1, configuration.http.idleTimeout >= 1,
              configuration.http.requestTimeout >= 1, storeConfiguration.retainChanges >= 1, storeConfiguration.retainChangesBytes >= 1,
              storeConfiguration.maxReadsPerObserver >= 1
        else {
            throw ValidationError(
                "threads, max-body, max-long-poll, connection-limit, max-connections-per-address, idle-timeout, request-timeout, retain-changes and retain-changes-bytes must be positive")
        }

        let application = try Application(configuration: configuration, logger: logger)
        try application.start()
        var received: Int32 = 0
        while sigwait(&stopSignals, &received) != 0 {}
        logger.info("\(received == SIGINT ? "SIGINT" : "SIGTERM") received; stopping")
        application.stop()
    }
}

/// Raises the soft limit on open descriptors to the hard limit (the soft
/// limit is often 1,024 where the hard one allows far more), and returns how
/// many connections that leaves room for: all but 64 descriptors, kept for
/// the database, the listening socket, epoll and the like.
func raiseDescriptorLimit() -> Int {
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    var limit = rlimit()
    guard getrlimit(resource, &limit) == 0 else { return 1_000 }
    if limit.rlim_cur < limit.rlim_max {
        var raised = limit
        raised.rlim_cur = limit.rlim_max
        if setrlimit(resource, &raised) == 0 { limit = raised }
    }
    return max(1, min(Int(clamping: limit.rlim_cur) - 64, 1 << 24))
}
