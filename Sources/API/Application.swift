import FoundationEssentials
import HTTPServer
import Logging
import ModelStore
import ModelStoreDatabases
import Models
import Concurrency
import Synchronization

/// The whole service: store, API and HTTP daemon, started and stopped together.
public final class Application: Sendable {
    public struct Configuration: Sendable {
        public var http = HTTPDaemon.Configuration()
        public var store: Store.Configuration
        /// The models served: the seed systems unless given.
        public var models: Catalog = SeedModels.catalog()
        public var limits = ObservableAPI.Limits()
        public var access = AccessPolicy()
        /// Seconds between housekeeping runs (pruning, TTL, persisting cursors).
        public var housekeepingInterval: Double = 1

        public init(store: Store.Configuration) {
            self.store = store
        }
    }

    public let store: Store
    public let api: ObservableAPI
    public let daemon: HTTPDaemon
    let configuration: Configuration
    let logger: Logger
    private let running = Atomic<Bool>(false)
    private let housekeeping = Locked<ServiceThread?>(nil)

    public init(configuration: Configuration, logger: Logger = Logger(label: "observable")) throws {
        self.configuration = configuration
        self.logger = logger
        store = try Store(configuration: configuration.store, catalog: configuration.models, logger: logger)
        // Weak: the daemon owns the responder that owns the API that owns this closure.
        let daemonBox = Locked(Weak<HTTPDaemon>())
        var limits = configuration.limits
        limits.trustedAddresses = configuration.http.trustedAddresses
        api = ObservableAPI(store: store, limits: limits, policy: configuration.access) {
            let daemon = daemonBox.withLock { $0.object }
            return (daemon?.parkedCount ?? 0, daemon?.streamCount ?? 0, daemon?.connectionCount ?? 0)
        }
        var http = configuration.http
        http.loggedPath = ObservableAPI.loggedPath
        daemon = HTTPDaemon(configuration: http, responder: api.responder(), logger: logger)
        daemonBox.withLock { $0.object = daemon }
        api.attach(daemon)
    }

    /// The port served (the real one when configured with port 0).
    public var port: UInt16 { daemon.port }

    public func start() throws {
        try daemon.start()
        store.startBackgroundWork()
        running.store(true, ordering: .releasing)
        let interval = configuration.housekeepingInterval
        let thread = ServiceThread.start(name: "observable.housekeeping") { [store] thread in
            // A stop wakes it: it does not wait for the interval to end.
            while !thread.sleep(seconds: interval) { store.maintain() }
        }
        housekeeping.withLock { $0 = thread }
        logger.info("observable-server listening on \(configuration.http.host):\(port), database \(StoreDatabase.redacted(configuration.store.database))")
    }

    /// Stops accepting, answers parked long-polls with their cursor, waits
    /// for requests in flight, and closes the database.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        daemon.stop()
        store.stopBackgroundWork()
        housekeeping.withLock { $0 }?.stop(timeout: .seconds(configuration.housekeepingInterval + 2))
        store.close()
        logger.info("observable-server stopped")
    }
}
