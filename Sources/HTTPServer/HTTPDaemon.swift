internal import CMicroHTTPD
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Concurrency
import Synchronization

/// The HTTP server: libmicrohttpd with epoll and an internal thread pool.
///
/// Requests are collected (headers, then the body chunk by chunk under a
/// limit) and handed to the responder once complete. Long-polls park their
/// connection with suspend/resume; the daemon's own clock answers them at
/// their deadline, because libmicrohttpd never times out a suspended
/// connection.
public final class HTTPDaemon: Sendable {
    public struct Configuration: Sendable {
        public var host: String = "0.0.0.0"
        public var port: UInt16 = 8080
        public var threads: Int = Configuration.defaultThreads
        /// One fewer than the cores, at least one: the committing thread
        /// and SQLite's checkpoint keep the other busy under writes, and a
        /// worker that shares a core with them (or with a client on the same
        /// machine) answers fewer requests than one that does not. On two
        /// cores with wrk beside it, one worker served `GET` at 132,000–141,000
        /// a second with a p99 of 0.5 ms; two, whenever connections landed
        /// on both, at 93,000–99,000 with 4 ms.
        public static var defaultThreads: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }
        /// Connections served at once; more are refused.
        public var connectionLimit: Int = 20_000
        /// Connections one client address (an IPv6 client: its /64) may
        /// hold at once, parked long-polls and event streams included; a new
        /// one beyond is answered `429` and closed. Nil: a quarter of
        /// `connectionLimit`, so that one address leaves room for others.
        /// Besides, the last eighth of `connectionLimit` is kept for
        /// addresses that hold no connection (`OpenConnections.reserve`).
        public var maxConnectionsPerAddress: Int?
        /// Addresses exempt from the per-address limit (and, in the API,
        /// from every per-client quota and rate).
        public var trustedAddresses = TrustedAddresses.none
        /// Seconds an idle (or slowly sending) connection is kept; also how
        /// long an event stream's client may take nothing of what waits for it.
        public var idleTimeout: Int = 30
        /// Seconds a client may take to send a request, head and body, from
        /// its first byte; one still arriving then is answered `408` and
        /// closed, however steadily it trickles (libmicrohttpd's idle
        /// timeout only counts silence). A connection waiting between
        /// requests is bounded by `idleTimeout` instead.
        public var requestTimeout: Int = 20
        /// Bytes of libmicrohttpd's per-connection memory pool; also bounds
        /// the size of the request line plus headers. libmicrohttpd zeroes
        /// the whole pool after every request, so the first answer on a
        /// connection touches every page of it: the first answer to 50,000
        /// parked polls took 2 s with 16 KiB, 1.3 s with 8.
        public var connectionMemory: Int = 8 * 1024
        /// Largest accepted request body, in bytes.
        public var maxBody: Int = 1 << 20
        /// Query parameters a request may have; one with more is answered `414`.
        public var maxQueryParameters: Int = 100
        public var listenBacklog: Int = 4096
        /// Seconds of silence after which an open event stream is sent a
        /// comment line, which keeps proxies from closing it.
        public var heartbeat: Double = 15
        /// What the debug log shows of a request's path: a path may hold a
        /// secret (an observer's id), which the log must not keep.
        public var loggedPath: @Sendable (String) -> String = { $0 }

        public init() {}

        /// `maxConnectionsPerAddress`, or its default.
        public var connectionsPerAddress: Int { maxConnectionsPerAddress ?? max(1, connectionLimit / 4) }
    }

    public enum StartError: Error, CustomStringConvertible {
        case badHost(String)
        case cannotStart(host: String, port: UInt16)

        public var description: String {
            switch self {
            case .badHost(let host): return "not an IPv4 or IPv6 address: \(host)"
            case .cannotStart(let host, let port): return "cannot listen on \(host):\(port) (in use, or not permitted)"
            }
        }
    }

    let configuration: Configuration
    let responder: any HTTPResponder
    let logger: Logger
    private let daemon = Locked<DaemonPointer?>(nil)
    let lot = Locked(ParkingLot())
    private let nextParkID = Atomic<UInt64>(1)
    let inFlight = Atomic<Int>(0)
    /// Connections suspended by `suspend` and not yet answered.
    private let suspended = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Answers parked connections whose deadline passed.
    private let deadlines = Locked<ServiceThread?>(nil)
    private let boundPort = Atomic<UInt16>(0)
    /// When the deadline clock looks next (monotonic nanoseconds).
    private let nextWake = Atomic<UInt64>(0)
    /// The open event streams (ended at stop), their heartbeats and their
    /// full sockets.
    let streamWriter: StreamWriter
    /// Every open connection: per address, and how long its request takes.
    let connections: OpenConnections
    /// The bodies being made while they are sent (cancelled at stop).
    private let bodies = Locked<[ObjectIdentifier: BodyStream]>([:])

    public init(configuration: Configuration, responder: any HTTPResponder, logger: Logger = Logger(label: "observable.http")) {
        self.configuration = configuration
        self.streamWriter = StreamWriter(heartbeat: .milliseconds(Int64(configuration.heartbeat * 1000)),
                                         stallTimeout: .seconds(configuration.idleTimeout))
        self.connections = OpenConnections(limitPerAddress: configuration.connectionsPerAddress,
                                           requestTimeout: .seconds(configuration.requestTimeout),
                                           trusted: configuration.trustedAddresses, connectionLimit: configuration.connectionLimit)
        self.responder = responder
        self.logger = logger
    }

    /// The port listened on (useful after asking for port 0).
    public var port: UInt16 { boundPort.load(ordering: .acquiring) }

    /// Connections parked by long-polls right now.
    public var parkedCount: Int { lot.withLock { $0.count } }

    /// Event streams open right now.
    public var streamCount: Int { streamWriter.count }

    /// Connections open right now.
    public var connectionCount: Int {
        daemon.withLock { $0.map { Int(osv_daemon_connections($0.raw)) } ?? 0 }
    }

    /// Starts listening and serving.
    public func start() throws {
        var flags = UInt32(MHD_USE_EPOLL_INTERNAL_THREAD.rawValue)
            | UInt32(MHD_ALLOW_SUSPEND_RESUME.rawValue)
            | UInt32(MHD_USE_ERROR_LOG.rawValue)
        let c = configuration
        let context = Unmanaged.passUnretained(self).toOpaque()
        var options = osv_daemon_options(
            thread_pool_size: UInt32(max(1, c.threads)),
            connection_limit: UInt32(c.connectionLimit),
            connection_timeout: UInt32(c.idleTimeout),
            connection_memory_limit: c.connectionMemory,
            listen_backlog: UInt32(c.listenBacklog),
            bind_address: nil,
            target_received: targetReceived,
            target_received_cls: context,
            connection_notified: connectionNotified)

        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let started: OpaquePointer?
        if c.host == "0.0.0.0" || c.host == "*" {
            started = osv_start_daemon(flags, c.port, acceptPolicy, context, accessHandler, context, requestCompleted, context, &options)
        } else if inet_pton(AF_INET, c.host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = c.port.bigEndian
            started = withUnsafePointer(to: &v4) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    options.bind_address = address
                    return osv_start_daemon(flags, c.port, acceptPolicy, context, accessHandler, context, requestCompleted, context, &options)
                }
            }
        } else if inet_pton(AF_INET6, c.host, &v6.sin6_addr) == 1 {
            flags |= UInt32(MHD_USE_IPv6.rawValue)
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = c.port.bigEndian
            started = withUnsafePointer(to: &v6) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    options.bind_address = address
                    return osv_start_daemon(flags, c.port, acceptPolicy, context, accessHandler, context, requestCompleted, context, &options)
                }
            }
        } else {
            throw StartError.badHost(c.host)
        }
        guard let started else { throw StartError.cannotStart(host: c.host, port: c.port) }
        daemon.withLock { $0 = DaemonPointer(raw: started) }
        boundPort.store(osv_daemon_port(started), ordering: .releasing)
        startTimer()
    }

    /// Stops accepting, answers every parked connection with its deadline
    /// answer, lets requests in flight finish (up to `grace`), then stops.
    public func stop(grace: Duration = .seconds(3)) {
        guard let current = daemon.withLock({ $0 }) else { return }
        // New connections are refused by `acceptPolicy` from here on.
        // (`MHD_quiesce_daemon` races with a worker thread that removes the
        // listening socket from its epoll set at the same moment, and then
        // aborts the process: "Failed to remove listen FD from epoll set".)
        stopping.store(true, ordering: .sequentiallyConsistent)
        let parked = lot.withLock { $0.removeAll() }
        // (One whose answer another thread took on is resumed by it: waited for below.)
        resume(parked.compactMap { parked in parked.onDeadline().map { (parked, $0) } })
        // Streams end after what they were sent (a client reconnects and resumes).
        for stream in streamWriter.streams { stream.close() }
        ServiceThread.wait(until: { inFlight.load(ordering: .acquiring) == 0 && bodyCount == 0 }, timeout: grace, step: 0.01)
        // A body still being sent is cut: its connection, if waiting for
        // bytes, is resumed to be closed.
        for body in bodies.withLock({ Array($0.values) }) { body.cancel() }
        // A stream's connection may be suspended: ended for good before the daemon stops.
        if !ServiceThread.wait(until: { streamWriter.count == 0 }, timeout: .seconds(5), step: 0.01) {
            // Clients that do not read what they were sent are cut.
            for stream in streamWriter.streams { stream.abort() }
            ServiceThread.wait(until: { streamWriter.count == 0 }, timeout: .seconds(2), step: 0.01)
        }
        streamWriter.stop()
        // A suspended connection must be resumed before the daemon stops,
        // and writes waiting for their commit are answered soon: wait for
        // them past the grace (bounded all the same).
        ServiceThread.wait(until: { suspended.load(ordering: .sequentiallyConsistent) == 0 }, timeout: .seconds(60))
        // The clock resumes connections: it is done before the daemon stops.
        deadlines.withLock { $0 }?.stop(timeout: .seconds(2))
        daemon.withLock { $0 = nil }
        MHD_stop_daemon(current.raw)
    }

    /// Answers parked connections: each one that is still parked gets its
    /// response and is resumed, exactly once. Call without holding locks.
    public func resume(_ answers: [(ParkedConnection, HTTPResponse)]) {
        var settled: [ParkedConnection] = []
        settled.reserveCapacity(answers.count)
        for (parked, response) in answers where parked.settle(with: response) {
            settled.append(parked)
        }
        guard !settled.isEmpty else { return }
        lot.withLock { lot in
            for parked in settled { _ = lot.remove(parked) }
        }
        for parked in settled {
            MHD_resume_connection(parked.connection.raw)
        }
    }

    // MARK: - Parking

    func park(_ connection: ConnectionPointer, context: RequestContext, timeout: Duration, onDeadline: @escaping @Sendable () -> HTTPResponse?) -> ParkedConnection? {
        guard !stopping.load(ordering: .acquiring) else { return nil }
        let id = nextParkID.add(1, ordering: .relaxed).oldValue
        let parked = ParkedConnection(id: id, connection: connection, deadline: ServerClock.now.advanced(by: timeout), onDeadline: onDeadline)
        MHD_suspend_connection(connection.raw)
        context.parked = parked
        let sooner = lot.withLock { lot -> Bool in
            lot.insert(parked)
            return parked.deadline.nanoseconds < nextWake.load(ordering: .relaxed)
        }
        if sooner { deadlines.withLock { $0 }?.wake() }
        return parked
    }

    func openStream(_ connection: ConnectionPointer, context: RequestContext, head: () -> HTTPResponse,
                    initial: [UInt8], onDrained: @escaping @Sendable () -> Void, onEnd: @escaping @Sendable () -> Void) -> EventStream?
    {
        guard !stopping.load(ordering: .acquiring) else { return nil }
        let head = head()
        let chunked = !context.isHTTP10
        let stream = EventStream(connection: connection, id: nextParkID.add(1, ordering: .relaxed).oldValue, daemon: self, chunked: chunked,
                                 onDrained: onDrained, onEnd: onEnd)
        streamWriter.add(stream)
        context.answered = true
        context.stream = stream
        // Written and suspended when the responder is done (`handle`).
        stream.prepare(head: EventStream.head(status: head.status, headers: head.headers, chunked: chunked), initial: initial)
        return stream
    }

    func bodyOpened(_ body: BodyStream) {
        bodies.withLock { $0[ObjectIdentifier(body)] = body }
    }

    func bodyClosed(_ body: BodyStream) {
        _ = bodies.withLock { $0.removeValue(forKey: ObjectIdentifier(body)) }
    }

    /// Bodies being sent right now.
    public var bodyCount: Int { bodies.withLock { $0.count } }

    func streamEnded(_ stream: EventStream) {
        streamWriter.remove(stream)
    }

    /// Whether `stop` has begun: new connections are refused from then on.
    public var isStopping: Bool { stopping.load(ordering: .acquiring) }

    func suspend(_ connection: ConnectionPointer, context: RequestContext) -> ParkedConnection? {
        // Counted before `stopping` is read, and `stop` sets `stopping`
        // before it reads the count: a suspension either sees the stop and
        // backs out, or `stop` waits for its answer.
        suspended.add(1, ordering: .sequentiallyConsistent)
        // (A daemon never started, as in a harness, has nothing to suspend.)
        guard !stopping.load(ordering: .sequentiallyConsistent), boundPort.load(ordering: .acquiring) != 0 else {
            suspended.subtract(1, ordering: .sequentiallyConsistent)
            return nil
        }
        // Not in the parking lot: no deadline, and `stop` does not answer it.
        let parked = ParkedConnection(id: 0, connection: connection, deadline: ServerClock.now, onDeadline: {
            self.responder.refusal(status: 503, detail: "The server stopped before the answer was ready.", request: nil)
        })
        MHD_suspend_connection(connection.raw)
        context.parked = parked
        return parked
    }

    func answerSuspended(_ parked: ParkedConnection, with response: HTTPResponse) {
        guard parked.settle(with: response) else { return }
        MHD_resume_connection(parked.connection.raw)
        suspended.subtract(1, ordering: .sequentiallyConsistent)
    }

    private func startTimer() {
        let thread = ServiceThread.start(name: "observable.deadlines") { [weak self] thread in
            // The daemon is held only while expired polls are answered, not
            // while the clock sleeps: a stopped daemon is freed at once. It
            // sleeps until the next deadline (a second at most), and `park`
            // wakes it for an earlier one.
            var wake = ServerClock.now
            while !thread.sleep(until: wake) {
                guard let next = HTTPDaemon.answerExpired(self) else { return }
                wake = next
            }
        }
        deadlines.withLock { $0 = thread }
    }

    /// Answers the parked connections whose deadline passed, and (once a
    /// second) cuts the connections whose request takes too long; returns
    /// when to look again, nil once the daemon is gone.
    private static func answerExpired(_ daemon: HTTPDaemon?) -> ServerClock.Instant? {
        guard let daemon else { return nil }
        let now = ServerClock.now
        let (expired, next) = daemon.lot.withLock { lot in
            let expired = lot.removeExpired(now: now)
            let latest = now.advanced(by: .seconds(1))
            let next = min(lot.nextDeadline ?? latest, latest)
            // Read by `park` under this lock: a deadline before it wakes the clock.
            daemon.nextWake.store(next.nanoseconds, ordering: .relaxed)
            return (expired, next)
        }
        // Already removed from the lot: settle and resume directly.
        for parked in expired {
            guard let response = parked.onDeadline(), parked.settle(with: response) else { continue }
            MHD_resume_connection(parked.connection.raw)
        }
        daemon.cutOverdueRequests(now: now)
        return next
    }

}
/// Refuses new connections once the daemon is stopping.
private func acceptPolicy(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> MHD_Result {
    guard let cls else { return .YES }
    return Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().isStopping ? .NO : .YES
}

private func targetReceived(_ cls: UnsafeMutableRawPointer?, _ target: UnsafePointer<CChar>?, _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let cls, let target, let connection else { return nil }
    return Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().takeTarget(target, connection: connection)
}

private func accessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
    _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?, _ uploadSize: UnsafeMutablePointer<Int>?,
    _ contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let url, let method, let uploadSize, let contextSlot else { return .NO }
    // Not retained: the daemon outlives its callbacks, and holding it on
    // every call would cost two atomic operations on its side table (it is
    // held weakly elsewhere), shared by every worker thread.
    return Unmanaged<HTTPDaemon>.fromOpaque(cls)._withUnsafeGuaranteedRef { daemon in
        daemon.handle(connection: connection, url: url, method: method, version: version,
                      uploadData: uploadData, uploadSize: uploadSize, contextSlot: contextSlot)
    }
}

private func requestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ reason: MHD_RequestTerminationCode
) {
    guard let cls else { return }
    Unmanaged<HTTPDaemon>.fromOpaque(cls)._withUnsafeGuaranteedRef { $0.completed(connection: connection, contextSlot: contextSlot) }
}

/// A connection was accepted or closed (`cls`: the daemon).
private func connectionNotified(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                _ event: MHD_ConnectionNotificationCode)
{
    guard let cls, let connection, let socketContext else { return }
    Unmanaged<HTTPDaemon>.fromOpaque(cls)._withUnsafeGuaranteedRef { daemon in
        if event == .CONNECTION_NOTIFY_CLOSED {
            daemon.connectionClosed(socketContext: socketContext)
        } else {
            daemon.connectionOpened(connection, socketContext: socketContext)
        }
    }
}

/// libmicrohttpd could not record a parameter of a request's query
/// (`osv_unescape` tells; `cls`: the daemon).
@_cdecl("osv_query_overflowed")
func queryOverflowed(_ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?) {
    guard let cls, let connection else { return }
    Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().queryOverflowed(connection)
}

/// A message of libmicrohttpd's (`cls`: the daemon). Closing a connection
/// on purpose (an event stream that ended) is reported as an "internal
/// error": not one here.
@_cdecl("osv_log_message")
func logMessage(_ cls: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let cls, let message else { return }
    var text = String(cString: message)
    while text.last?.isWhitespace == true { text.removeLast() }
    let daemon = Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue()
    if text.hasPrefix("Application reported internal error") {
        daemon.logger.trace("libmicrohttpd: \(text)")
    } else {
        daemon.logger.notice("libmicrohttpd: \(text)")
    }
}
