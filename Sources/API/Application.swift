import FoundationEssentials
import HTTPServer
import Logging
import ModelStore
import Models
import Locks
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
    private let housekeepingDone = Locked<Bool>(false)

    public init(configuration: Configuration, logger: Logger = Logger(label: "observable")) throws {
        self.configuration = configuration
        self.logger = logger
        store = try Store(configuration: configuration.store, catalog: configuration.models, logger: logger)
        // Weak: the daemon owns the responder that owns the API that owns this closure.
        let daemonBox = Locked(Weak<HTTPDaemon>())
        api = ObservableAPI(store: store, limits: configuration.limits, policy: configuration.access) {
            let daemon = daemonBox.withLock { $0.object }
            return (daemon?.parkedCount ?? 0, daemon?.connectionCount ?? 0)
        }
        daemon = HTTPDaemon(configuration: configuration.http, responder: api.responder(), logger: logger)
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
        BackgroundThread.start(name: "observable.housekeeping") { [self] in
            // Short naps, so that stopping does not wait for a whole interval.
            var next = Date().addingTimeInterval(interval)
            while running.load(ordering: .acquiring) {
                BackgroundThread.sleep(seconds: 0.05)
                if running.load(ordering: .acquiring) && Date() >= next {
                    store.maintain()
                    next = Date().addingTimeInterval(interval)
                }
            }
            housekeepingDone.withLock { $0 = true }
        }
        logger.info("observable-server listening on \(configuration.http.host):\(port), database \(configuration.store.databasePath)")
    }

    /// Stops accepting, answers parked long-polls with their cursor, waits
    /// for requests in flight, and closes the database.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        daemon.stop()
        store.stopBackgroundWork()
        BackgroundThread.sleep(until: { housekeepingDone.withLock { $0 } },
                               timeout: .seconds(configuration.housekeepingInterval + 2), step: 0.01)
        store.close()
        logger.info("observable-server stopped")
    }
}
