import Concurrency
import Logging
import ModelObservation

/// Several instances sharing one database (PostgreSQL): the shared
/// storage, the journal's version this instance's state reflects, the
/// threads that follow the other instances' commits and answer
/// `whenSynchronized`, and the consumers of observers (parked polls,
/// streams) announced between instances.
///
/// The store applies what the others committed to its state and its
/// registry (`Store.follow`); this type knows how far it got, and which
/// consumer gives way to which.
final class InstanceSharing: Sendable {
    /// The store's storage, shared; its calls made outside the writer lock
    /// (the probe, the listener, claims) have connections and locks of
    /// their own.
    let storage: any SharedStorage
    /// This instance among those sharing the database.
    let instance = Identifier.make()
    /// The journal's version the state reflects; moved after the state it
    /// stands for is current.
    private let applied: Locked<Int64>
    /// One question to the database for the reads waiting at that moment.
    let freshness = SharedRound()
    /// Follows the other instances' commits.
    private let follower = Locked<ServiceThread?>(nil)
    /// Reads waiting for the state to catch up (`whenSynchronized`), and the
    /// thread that serves them.
    private let waitingForSync = Locked<[@Sendable (Result<Void, any Error>) -> Void]>([])
    private let synchronizer = Locked<ServiceThread?>(nil)
    /// Per observer, this instance's announcements of a consumer (a parked
    /// poll, a stream, a poll answered at once) not heard back yet, and
    /// when the last was sent. Announcements reach every instance in the
    /// order they were sent, on one channel: one from another instance
    /// heard before them was sent before them, and names an older
    /// consumer, which must not end this one (`giveWay`).
    private let unheardAnnouncements = Locked<[String: (count: Int, sent: ServerClock.Instant)]>([:])
    /// Answers parked polls that gave way to one parked elsewhere.
    private let displacedHandler = Locked<Store.Wake?>(nil)
    private let logger: Logger

    /// `appliedVersion`: the journal's version of the state loaded.
    init(storage: any SharedStorage, appliedVersion: Int64, logger: Logger) {
        self.storage = storage
        applied = Locked(appliedVersion)
        self.logger = logger
    }

    // MARK: - The version applied

    /// The journal's version the state reflects.
    var appliedVersion: Int64 { applied.withLock { $0 } }

    /// Moves the applied version to `version`, unless it is there already.
    func applied(through version: Int64) {
        applied.withLock { $0 = max($0, version) }
    }

    /// Moves the applied version to this instance's last commit.
    func appliedOwnCommit() {
        let version = storage.committedVersion
        applied(through: version)
    }

    /// Sets the applied version to that of the state loaded again.
    func reloaded(at version: Int64) {
        applied.withLock { $0 = version }
    }

    // MARK: - Threads

    /// Starts the thread that listens for the others' commits and has
    /// `store` apply them, then the one that answers `whenSynchronized`.
    /// Each ends once `store` is gone, or at `stop`.
    func start(for store: Store) {
        startFollowing(store)
        startSynchronizing(store)
    }

    /// Stops both threads, waiting for each.
    func stop() {
        follower.withLock { $0 }?.stop()
        synchronizer.withLock { $0 }?.stop()
    }

    /// While the database cannot be reached the follower tries again with
    /// backoff, and catches up once it can.
    private func startFollowing(_ store: Store) {
        let thread = ServiceThread.start(name: "observable.follow") { [weak store] thread in
            var backoff = 0.05
            var caughtUp = false
            while !thread.isStopping {
                guard let store, let sharing = store.sharing else { return }
                do {
                    let (announced, parked) = try sharing.storage.awaitAnnouncement(timeout: 0.25)
                    // After (re)connecting the listener, announcements made
                    // before it listened are caught up from the journal.
                    if announced != nil || !caughtUp {
                        try store.follow(to: caughtUp ? announced : nil)
                        caughtUp = true
                    }
                    sharing.giveWay(parked, in: store.registry)
                    backoff = 0.05
                } catch {
                    if caughtUp { sharing.logger.warning("lost the shared database: \(error)") }
                    caughtUp = false
                    if thread.sleep(seconds: backoff) { return }
                    backoff = min(backoff * 2, 2)
                }
            }
        }
        follower.withLock { $0 = thread }
    }

    private func startSynchronizing(_ store: Store) {
        let thread = ServiceThread.start(name: "observable.sync") { [weak store] thread in
            while true {
                guard let store, let sharing = store.sharing else { return }
                let waiting = sharing.waitingForSync.withLock { waiting in
                    defer { waiting.removeAll(keepingCapacity: true) }
                    return waiting
                }
                guard !waiting.isEmpty else {
                    if thread.isStopping { return }
                    if thread.sleep(seconds: 3600) { continue }
                    continue
                }
                let result = Result { try store.synchronize() }
                for then in waiting { then(result) }
            }
        }
        synchronizer.withLock { $0 = thread }
    }

    /// Has the thread that answers `whenSynchronized` call `then`; false
    /// when there is no such thread.
    func whenSynchronized(_ then: @escaping @Sendable (Result<Void, any Error>) -> Void) -> Bool {
        guard let thread = synchronizer.withLock({ $0 }) else { return false }
        waitingForSync.withLock { $0.append(then) }
        thread.wake()
        return true
    }

    // MARK: - Consumers announced

    /// Announces a poll of `observer` parked on this instance, or a stream
    /// of it opened here, so that one parked or open on another gives way.
    func announceParked(_ observer: String, stream: Bool) {
        let sent = ServerClock.now
        unheardAnnouncements.withLock { $0[observer] = (($0[observer]?.count ?? 0) + 1, sent) }
        do {
            try storage.announceParked(instance: instance, observer: observer, stream: stream)
        } catch {
            // Never to be heard back.
            unheardAnnouncements.withLock { unheard in
                guard let entry = unheard[observer] else { return }
                unheard[observer] = entry.count > 1 ? (entry.count - 1, entry.sent) : nil
            }
            logger.warning("could not announce a parked poll: \(error)")
        }
    }

    /// Answers this instance's parked polls in `registry`, and ends its
    /// streams (parked or delivering), of observers with a newer consumer
    /// elsewhere: a poll parked or answered there, or a stream opened.
    private func giveWay(_ parked: [ParkedAnnouncement], in registry: ObservationRegistry) {
        // In the order they were sent: another instance's announcement heard
        // before this one's own of the same observer comes back was sent
        // before it, so the consumer it names is older than this one's, and
        // is the one to give way (this one's announcement tells it so).
        // What was not heard back within `announcementHorizon` (a listener
        // that reconnected) no longer holds others back.
        let others = unheardAnnouncements.withLock { Self.newer(parked, than: instance, unheard: &$0, now: ServerClock.now) }
        guard !others.isEmpty else { return }
        let displaced = registry.displaceConsumers(of: others.map(\.observer))
        if !displaced.isEmpty, let handler = displacedHandler.withLock({ $0 }) { handler(displaced) }
    }

    /// Of `parked` (announcements in the order heard), those of other
    /// instances sent after every announcement of `instance`'s of the same
    /// observer: those heard before its own comes back were sent before it
    /// (`unheard`, which its own, heard, leave).
    static func newer(_ parked: [ParkedAnnouncement], than instance: String,
                      unheard: inout [String: (count: Int, sent: ServerClock.Instant)], now: ServerClock.Instant) -> [ParkedAnnouncement]
    {
        parked.filter { announcement in
            guard let entry = unheard[announcement.observer] else { return announcement.instance != instance }
            if announcement.instance == instance {
                unheard[announcement.observer] = entry.count > 1 ? (entry.count - 1, entry.sent) : nil
                return false
            }
            guard entry.sent.advanced(by: announcementHorizon) < now else { return false }
            unheard[announcement.observer] = nil
            return true
        }
    }

    /// How long this instance's announcement may take to be heard back
    /// before announcements of others count again.
    static let announcementHorizon: Duration = .seconds(10)

    /// Sets who answers parked polls that gave way to a poll parked on another instance.
    func onDisplaced(_ handler: @escaping Store.Wake) {
        displacedHandler.withLock { $0 = handler }
    }

    // MARK: - The database

    /// Whether the database answers now.
    var isReachable: Bool { (try? storage.newestVersion()) != nil }

    /// Whether this instance is, now, the one that runs `work` among those
    /// sharing the database.
    func claim(_ work: String) -> Bool {
        (try? storage.claim(work)) ?? false
    }
}
