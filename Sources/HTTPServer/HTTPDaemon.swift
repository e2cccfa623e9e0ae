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
        public var maxConnectionsPerAddress: Int?
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
    private let lot = Locked(ParkingLot())
    private let nextParkID = Atomic<UInt64>(1)
    private let inFlight = Atomic<Int>(0)
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

    public init(configuration: Configuration, responder: any HTTPResponder, logger: Logger = Logger(label: "observable.http")) {
        self.configuration = configuration
        self.streamWriter = StreamWriter(heartbeat: .milliseconds(Int64(configuration.heartbeat * 1000)),
                                         stallTimeout: .seconds(configuration.idleTimeout))
        self.connections = OpenConnections(limitPerAddress: configuration.connectionsPerAddress,
                                           requestTimeout: .seconds(configuration.requestTimeout))
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
        ServiceThread.wait(until: { inFlight.load(ordering: .acquiring) == 0 }, timeout: grace, step: 0.01)
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

    func openStream(_ connection: ConnectionPointer, context: RequestContext, status: Int, headers: [(name: String, value: String)],
                    initial: [UInt8], onDrained: @escaping @Sendable () -> Void, onEnd: @escaping @Sendable () -> Void) -> EventStream?
    {
        guard !stopping.load(ordering: .acquiring) else { return nil }
        let chunked = !context.isHTTP10
        let stream = EventStream(connection: connection, id: nextParkID.add(1, ordering: .relaxed).oldValue, daemon: self, chunked: chunked,
                                 onDrained: onDrained, onEnd: onEnd)
        streamWriter.add(stream)
        context.answered = true
        context.stream = stream
        // Written and suspended when the responder is done (`handle`).
        stream.prepare(head: EventStream.head(status: status, headers: headers, chunked: chunked), initial: initial)
        return stream
    }

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
            self.responder.refusal(status: 503, detail: "The server stopped before the answer was ready.")
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

    // MARK: - Request lifecycle (called from the C callbacks)

    func handle(connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>, version: UnsafePointer<CChar>?,
                uploadData: UnsafePointer<CChar>?,
                uploadSize: UnsafeMutablePointer<Int>, contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result
    {
        guard let raw = contextSlot.pointee else {
            let context = RequestContext()
            contextSlot.pointee = Unmanaged.passRetained(context).toOpaque()
            return start(context, connection: connection, url: url, method: method, version: version)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        // A request with a query has had its context since `takeQuery`.
        guard context.isStarted else { return start(context, connection: connection, url: url, method: method, version: version) }
        if uploadSize.pointee > 0 {
            let size = uploadSize.pointee
            if context.body.count + size > configuration.maxBody {
                // A chunked body (a longer announced one was refused at once):
                // answered as soon as it passes the limit. libmicrohttpd
                // cannot queue an answer before the body's end, so it is
                // written here and the connection closed.
                context.body = []
                context.answered = true
                if requestIsIn(connection) { bodyTooLarge.write(closingTo: osv_connection_fd(connection)) }
                return .NO
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { bytes in
                    context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size))
                }
            }
            uploadSize.pointee = 0
            return .YES
        }
        if let stream = context.stream {
            // Resumed (or never suspended) to end: closed, as its head said.
            return stream.isHandedBack ? .NO : .YES
        }
        if let parked = context.parked {
            // Resumed: the answer was stored before resuming.
            guard let response = parked.takeAnswer() else { return .NO }
            return send(response, on: connection, context: context)
        }
        if context.answered { return .YES }
        guard requestIsIn(connection) else { return .NO }
        let request = HTTPRequest(
            method: context.method,
            path: context.url,
            query: context.query,
            fields: context.fields,
            body: context.body)
        context.body = []
        context.fields = []
        let handle = Connection(daemon: self, pointer: ConnectionPointer(raw: connection), context: context)
        switch responder.respond(to: request, connection: handle) {
        case .response(let response):
            return send(response, on: connection, context: context)
        case .parked:
            // A stream opens now; one whose client left already is closed.
            if let stream = context.stream { return stream.open() ? .YES : .NO }
            // What only the handler read is not kept while the poll waits:
            // 50,000 of them hold it for as long as they are parked.
            context.query = [:]
            return .YES
        }
    }

    /// The first call for a request: its headers are in, its body is not.
    /// A request refused here (its framing, its target, its announced
    /// length) is answered before its body is read, and its connection
    /// closed.
    private func start(_ context: RequestContext, connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                       version: UnsafePointer<CChar>?) -> MHD_Result
    {
        let method = methodName(method)
        let path = Self.path(ofTarget: url, method: method)
        context.start(method: method, url: path ?? String(cString: url))
        context.isHTTP10 = version.map { strcmp($0, "HTTP/1.0") == 0 } ?? false
        inFlight.add(1, ordering: .relaxed)
        if let refusal = context.refusal {
            return refuse(refusal, on: connection, context: context)
        }
        let head = headerFields(connection, version: version)
        let framing = head.framing
        if let (status, detail) = Self.framingRefusal(framing, isHTTP10: context.isHTTP10) {
            return refuse(responder.refusal(status: status, detail: detail), on: connection, context: context)
        }
        if path == nil {
            return refuse(responder.refusal(
                status: 400, detail: "The request target is neither a path (/…), nor an absolute URL (http://host/…), nor * for OPTIONS."),
                          on: connection, context: context)
        }
        // An announced oversize body is refused before it is read.
        if framing.content_lengths > 0, framing.content_length > UInt64(configuration.maxBody) {
            return refuse(bodyTooLarge, on: connection, context: context)
        }
        context.fields = head.values
        return .YES
    }

    /// `413` for a body over the limit.
    private var bodyTooLarge: HTTPResponse {
        responder.refusal(status: 413, detail: "The request body exceeds \(configuration.maxBody) bytes.")
    }

    /// `response`, closing its connection.
    private func closing(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.setHeader("Connection", "close")
        return response
    }

    /// Answers a request before its body is read, and closes its connection.
    private func refuse(_ refusal: HTTPResponse, on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
        guard requestIsIn(connection) else { return .NO }
        return send(closing(refusal), on: connection, context: context)
    }

    /// Called with a request's target (path and query, as sent) before
    /// libmicrohttpd parses the query; the context returned becomes the
    /// request's. libmicrohttpd keeps each query parameter in the
    /// connection's fixed memory pool and, when they overflow it, queues its
    /// `431` but then waits for header lines it never reads: the request
    /// hangs until the idle timeout. So the query is read here and ended
    /// right after the `?` in libmicrohttpd's own buffer (which it splits in
    /// place at that `?`), and libmicrohttpd parses no parameter.
    func takeQuery(from target: UnsafePointer<CChar>, connection: OpaquePointer) -> UnsafeMutableRawPointer? {
        if Self.hasBlankOrControl(target) {
            // libmicrohttpd takes what lies between the method and the
            // version as the target, blanks and all (`GET /a b HTTP/1.1`).
            let context = RequestContext()
            context.refusal = responder.refusal(
                status: 400, detail: "The request target contains whitespace or a control character.")
            // libmicrohttpd parses no parameter of it either.
            if let mark = strchr(target, Int32(UInt8(ascii: "?"))) { (mark + 1).pointee = 0 }
            return Unmanaged.passRetained(context).toOpaque()
        }
        guard let mark = strchr(target, Int32(UInt8(ascii: "?"))) else {
            if endsBeforeVersion(target + strlen(target)) { return nil }
            // A NUL byte in the target hides the rest of it (and any query)
            // from this callback but not from libmicrohttpd: refused, and the
            // connection closed soon if the hidden query overflows the pool.
            osv_set_connection_timeout(connection, 1)
            let context = RequestContext()
            context.refusal = responder.refusal(status: 400, detail: "The request target contains a NUL byte.")
            return Unmanaged.passRetained(context).toOpaque()
        }
        let query = mark + 1
        let context = RequestContext()
        if let parameters = QueryString.parameters(query, limit: configuration.maxQueryParameters) {
            context.query = parameters
        } else {
            context.refusal = responder.refusal(
                status: 414, detail: "A query may have at most \(configuration.maxQueryParameters) parameters.")
        }
        // libmicrohttpd parses the text after the `?` once this returns:
        // ended here, it is empty.
        query.pointee = 0
        return Unmanaged.passRetained(context).toOpaque()
    }

    func completed(connection: OpaquePointer?, contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        if let connection { requestDone(connection) }
        guard let slot = contextSlot, let raw = slot.pointee else { return }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        slot.pointee = nil
        // Ended before its headers were in (refused by libmicrohttpd, or the
        // client left): never counted in flight.
        guard context.isStarted else { return }
        if let parked = context.parked, parked.isParked {
            // Completed while still parked (the daemon is closing): forget it.
            _ = lot.withLock { $0.remove(parked) }
        }
        context.stream?.ended()
        inFlight.subtract(1, ordering: .relaxed)
    }

    private func send(_ response: HTTPResponse, on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
        context.answered = true
        if logger.logLevel <= .debug {
            logger.debug("\(context.method) \(configuration.loggedPath(context.url)) \(response.status)")
        }
        guard let prepared = response.prepared ?? PreparedResponse(response) else { return .NO }
        return withExtendedLifetime(prepared) { MHD_queue_response(connection, UInt32(response.status), prepared.raw) }
    }

    /// The header fields as received, and what they say about the
    /// request's framing, in one pass over libmicrohttpd's list.
    private func headerFields(_ connection: OpaquePointer, version: UnsafePointer<CChar>?) -> RequestHead {
        var head = RequestHead()
        osv_begin_framing(&head.framing, version, 1)
        withUnsafeMutablePointer(to: &head) { head in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectValue, UnsafeMutableRawPointer(head))
        }
        osv_end_framing(&head.framing)
        return head
    }
}

/// The daemon pointer, guarded by the daemon's mutex.
struct DaemonPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Per-request state kept in libmicrohttpd's `con_cls` slot. libmicrohttpd
/// calls back for one connection on one thread at a time, so the fields are
/// never touched concurrently.
final class RequestContext: @unchecked Sendable {
    /// Known from the first call of the access handler, once the headers are in.
    private(set) var method = ""
    private(set) var url = ""
    private(set) var isStarted = false
    /// Read off the target before libmicrohttpd parses it (`takeQuery`).
    var query: [String: String] = [:]
    /// The answer to a request refused from its target alone, sent once its
    /// headers are in.
    var refusal: HTTPResponse?
    /// The header fields, from the first call until the request is handed on.
    var fields: [HeaderField] = []
    var body: [UInt8] = []
    var answered = false
    var parked: ParkedConnection?
    /// The event stream this request answers with.
    var stream: EventStream?
    /// An HTTP/1.0 request (no chunked answers).
    var isHTTP10 = false

    init() {}

    /// A request whose headers are in, for a harness that answers requests
    /// without a daemon.
    convenience init(method: String, url: String) {
        self.init()
        start(method: method, url: url)
    }

    func start(method: String, url: String) {
        self.method = method
        self.url = url
        isStarted = true
    }
}

/// A request's header fields and framing as one pass collects them, in a
/// struct on the collecting thread's stack (reached through a pointer: no
/// allocation, and no exclusivity check per field).
struct RequestHead {
    var values: [HeaderField] = []
    var framing = osv_framing()

    init() { values.reserveCapacity(8) }
}

private func collectValue(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
                          _ value: UnsafePointer<CChar>?, _ valueSize: Int) -> MHD_Result
{
    guard let cls, let key else { return .YES }
    let head = cls.assumingMemoryBound(to: RequestHead.self)
    osv_check_field(&head.pointee.framing, key, keySize, value, valueSize)
    head.pointee.values.append(HeaderField(name: string(key, keySize), value: value.map { string($0, valueSize) } ?? ""))
    return .YES
}

/// `count` bytes at `bytes` as a string (libmicrohttpd gives the length:
/// no `strlen`).
private func string(_ bytes: UnsafePointer<CChar>, _ count: Int) -> String {
    bytes.withMemoryRebound(to: UInt8.self, capacity: count) { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) }
}

/// Whether the NUL at `end` is the one libmicrohttpd wrote between the target
/// and `HTTP/1.x` (the line's own end follows): otherwise the target holds a
/// NUL byte. Reads stop at the first difference, so stay within the line.
private func endsBeforeVersion(_ end: UnsafePointer<CChar>) -> Bool {
    func byte(_ i: Int) -> UInt8 { UInt8(bitPattern: end[i]) }
    func isDigit(_ i: Int) -> Bool { byte(i) >= UInt8(ascii: "0") && byte(i) <= UInt8(ascii: "9") }
    return byte(1) == UInt8(ascii: "H") && byte(2) == UInt8(ascii: "T") && byte(3) == UInt8(ascii: "T")
        && byte(4) == UInt8(ascii: "P") && byte(5) == UInt8(ascii: "/") && isDigit(6) && byte(7) == UInt8(ascii: ".")
        && isDigit(8) && byte(9) == 0
}

/// The request method, as a string literal for the usual ones (no copy).
private func methodName(_ method: UnsafePointer<CChar>) -> String {
    guard method[0] != 0 else { return "" }
    switch (method[0], method[1]) {
    case (0x47, 0x45) where strcmp(method, "GET") == 0: return "GET"
    case (0x50, 0x4F) where strcmp(method, "POST") == 0: return "POST"
    case (0x50, 0x41) where strcmp(method, "PATCH") == 0: return "PATCH"
    case (0x44, 0x45) where strcmp(method, "DELETE") == 0: return "DELETE"
    case (0x48, 0x45) where strcmp(method, "HEAD") == 0: return "HEAD"
    case (0x4F, 0x50) where strcmp(method, "OPTIONS") == 0: return "OPTIONS"
    case (0x50, 0x55) where strcmp(method, "PUT") == 0: return "PUT"
    default: return String(cString: method)
    }
}

/// Refuses new connections once the daemon is stopping.
private func acceptPolicy(_ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> MHD_Result {
    guard let cls else { return .YES }
    return Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().isStopping ? .NO : .YES
}

private func targetReceived(_ cls: UnsafeMutableRawPointer?, _ target: UnsafePointer<CChar>?, _ connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let cls, let target, let connection else { return nil }
    return Unmanaged<HTTPDaemon>.fromOpaque(cls).takeUnretainedValue().takeQuery(from: target, connection: connection)
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
