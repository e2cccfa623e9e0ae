import Concurrency
import HTTPServer
import JSON
import ModelObservation
import ModelStore

/// The HTTP API: routes from HTTP to the models, reads tracked for
/// observers, and the change feed.
public final class ObservableAPI: Sendable {
    public struct Limits: Sendable {
        /// Default long-poll wait, seconds.
        public var defaultLongPoll: Int = 30
        /// Longest long-poll wait a client may ask for, seconds.
        public var maxLongPoll: Int = 60
        /// Most event streams one client may hold open (`--max-streams-per-client`).
        public var maxStreamsPerClient: Int = 64
        /// Writes one client may make a second, sustained (`--max-writes-per-second`).
        public var maxWritesPerSecond: Double = 50
        /// Writes one client may make at once before its rate holds it (`--write-burst`).
        public var writeBurst: Int = 500
        /// Elements past which a read is rendered apart from the workers (`--large-read-elements`).
        public var largeReadElements: Int = 200
        /// Bytes past which such a read is sent a piece at a time (`--large-read-bytes`).
        public var largeReadBytes: Int = 1 << 20
        /// Large reads one client may have in progress (`--max-large-reads-per-client`).
        public var maxLargeReadsPerClient: Int = 4
        /// Large reads in progress in all (`--max-large-reads`).
        public var maxLargeReads: Int = 32
        /// Addresses exempt from every per-client quota and rate (`OBSERVABLE_TRUSTED_ADDRESSES`).
        public var trustedAddresses = TrustedAddresses.none
        public init() {}
    }

    let store: Store
    let feed: ChangeFeed
    let metrics: Metrics
    /// The last answer to each read, while the state it shows is current.
    let answers = ReadAnswers()
    let limits: Limits
    let policy: AccessPolicy
    /// Who a request comes from, for the quotas per client.
    let clients: Clients
    /// Each client's write rate.
    let writeRate: WriteRate
    /// The large reads in progress, each rendered apart from the workers.
    let largeReads: LargeReads
    let daemonGauges: @Sendable () -> (parked: Int, streams: Int, connections: Int)

    public init(store: Store, limits: Limits = Limits(), policy: AccessPolicy = AccessPolicy(), metrics: Metrics = Metrics(),
                daemonGauges: @escaping @Sendable () -> (parked: Int, streams: Int, connections: Int))
    {
        self.store = store
        self.policy = policy
        self.metrics = metrics
        self.limits = limits
        clients = Clients(policy: policy, trusted: limits.trustedAddresses)
        writeRate = WriteRate(perSecond: limits.maxWritesPerSecond, burst: limits.writeBurst)
        largeReads = LargeReads(apartAbove: limits.largeReadElements, keptWholeUpTo: limits.largeReadBytes,
                                maxInAll: limits.maxLargeReads, maxPerClient: limits.maxLargeReadsPerClient)
        self.feed = ChangeFeed(store: store, metrics: metrics, maxStreamsPerClient: limits.maxStreamsPerClient)
        self.daemonGauges = daemonGauges
        // Weak: the feed holds the store.
        store.onWake { [weak feed] woken in feed?.wake(woken) }
        store.onDisplaced { [weak feed] displaced in feed?.giveWay(displaced) }
    }

    /// Lets the change feed resume the connections it parks on `daemon`.
    public func attach(_ daemon: HTTPDaemon) {
        feed.attach(daemon)
    }

    /// Every route of the API.
    public func responder() -> RouterResponder {
        let router = Router()
        addOperationRoutes(to: router)
        addObserverRoutes(to: router)
        addModelRoutes(to: router)
        addOpenAPIRoutes(to: router)
        addPageRoutes(to: router)
        return router.buildResponder(metrics: metrics, policy: policy, extraStages: [WriteRateCheck(rate: writeRate, clients: clients)])
    }

    // MARK: - Shared answers

    /// Answers a `GET` with `representation`: `ETag`, `Observation-Cursor`,
    /// `If-None-Match`, and the reads tracked for the request's observer
    /// (none for a `HEAD`).
    ///
    /// On a shared database the read first waits, its connection suspended
    /// rather than its worker thread, for the state to reflect every commit
    /// made through any instance before it began: one question to the
    /// database serves all the reads waiting at that moment.
    func read(_ context: RouteContext, fields allowed: [String],
              _ render: @escaping @Sendable (ModelState, FieldSelection) throws -> Representation) throws -> Reply
    {
        try read(context, fields: allowed, rendering: .whole(render))
    }

    /// `read` of a list, whose answer may be large: `large.elements` tells
    /// how many elements it shows, and past `largeReads.apartAbove` it is
    /// rendered on a thread of its own and, past `largeReads.keptWholeUpTo`
    /// bytes, sent a piece at a time (`render` writes into the output it is
    /// given).
    func read(_ context: RouteContext, fields allowed: [String], large: LargeRead, _ render: @escaping LargeRead.Render) throws -> Reply {
        try read(context, fields: allowed, rendering: .large(large, render))
    }

    private func read(_ context: RouteContext, fields allowed: [String], rendering: ReadRendering) throws -> Reply {
        guard store.isShared, let suspended = context.connection.suspend() else {
            try store.synchronize()
            return try readNow(context, fields: allowed, rendering: rendering, apart: nil, suspended: nil)
        }
        let read = PendingRead(context: context, fields: allowed, rendering: rendering)
        store.whenSynchronized { [self] synchronized in
            let outcome: Result<HTTPResponse, any Error>
            do {
                try synchronized.get()
                guard case .response(let answer) = try readNow(context, fields: read.fields, rendering: read.rendering, apart: nil,
                                                               suspended: suspended) else { return }
                outcome = .success(answer)
            } catch {
                outcome = .failure(error)
            }
            suspended.answer(context.finish(outcome))
        }
        return .parked
    }

    /// `read`, on the state as it is now; `suspended` is its connection
    /// when that is suspended already. A large read is handed to a thread
    /// of its own (`readApart`), where `apart` holds its ticket;
    /// `wholeHere` renders it here instead, whole (the server is stopping).
    func readNow(_ context: RouteContext, fields: [String], rendering: ReadRendering, apart: LargeReads.Ticket?, wholeHere: Bool = false,
                 suspended: SuspendedConnection?) throws -> Reply
    {
        let request = context.request
        let observer = request.header("Observer") ?? request.query["observer"]
        let snapshot = store.snapshot
        // A conditional read may answer 304: made each time.
        let conditional = request.header("If-None-Match") != nil
        // A parameter named twice is not in the key answers are kept under.
        let keeps = !conditional && request.repeatedQuery.isEmpty
        let kept = !keeps ? nil : answers.answer(to: request.path, query: request.query, in: snapshot)
        // An observer it does not know is refused before a read is
        // rendered; the read of a kept answer finds it out when tracked.
        if let observer, kept == nil || request.method == "HEAD", !store.knowsObserver(observer) {
            throw Self.unknownObserver(observer)
        }
        if kept == nil, apart == nil, !wholeHere, let large = rendering.large, large.elements(snapshot.state) > largeReads.apartAbove {
            return try readApart(PendingRead(context: context, fields: fields, rendering: rendering), suspended: suspended)
        }
        let representation: Representation
        let response: HTTPResponse
        if let kept {
            (representation, response) = kept
        } else {
            let selection = try FieldSelection(query: request.query["fields"], allowed: fields)
            let output = apart == nil ? nil : RepresentationOutput.measuring(keepLimit: largeReads.keptWholeUpTo)
            representation = try rendering.render(snapshot.state, selection, into: output)
            var made: HTTPResponse
            if let streamed = representation.streamed {
                let state = snapshot.state, ticket = apart
                made = Self.json(streamed: streamed, request: request, cursor: snapshot.state.seq) { body in
                    _ = try? rendering.render(state, selection, into: RepresentationOutput.sending { body.write($0) })
                } onEnd: {
                    ticket?.release()
                }
            } else {
                made = Self.json(representation.bytes, request: request, cursor: snapshot.state.seq)
            }
            for next in representation.nextPages { made.headers.append(("Link", next.link)) }
            response = made
            // A body sent a piece at a time is never kept whole.
            if keeps, representation.streamed == nil {
                answers.keep(representation, response, for: request.path, query: request.query, in: snapshot)
            }
        }
        // A HEAD shows no values, so its observer has read nothing; it is
        // still a use of the observer.
        if let observer, request.method == "HEAD" {
            store.touchObserver(observer, now: ServerClock.wallSeconds)
        }
        guard let observer, request.method != "HEAD" else { return .response(response) }
        return try answer(context, response, once: representation.reads, by: observer, at: snapshot.state.seq, suspended: suspended)
    }

    /// Answers `response` once the reads it showed are stored for
    /// `observer`: at once when they were stored on this thread (or were
    /// not new), else from the committing thread, where the reads of the
    /// requests waiting beside them are stored with them (as writes are,
    /// in `commit`), the connection suspended until then.
    private func answer(_ context: RouteContext, _ response: HTTPResponse, once reads: [PropertyKey], by observer: String, at seq: Int64,
                        suspended: SuspendedConnection?) throws -> Reply
    {
        // Made only for reads stored by the committing thread (not those
        // stored in the read journal, on this one).
        var suspension: Suspension?
        let outcome = store.submitTrack(reads, by: observer, at: seq, wait: {
            guard let suspension else { return false }
            if suspension.connection == nil { suspension.connection = context.connection.suspend() }
            return suspension.connection != nil
        }, then: {
            let made = Suspension()
            made.connection = suspended
            suspension = made
            return { result in
                let outcome = result.map { response }.mapError { Self.trackError($0, observer: observer) }
                made.connection?.answer(context.finish(outcome))
            }
        })
        guard let outcome else { return .parked }
        if case .failure(let error) = outcome { throw Self.trackError(error, observer: observer) }
        return .response(response)
    }

    static func unknownObserver(_ observer: String) -> APIError {
        APIError(404, "no observer \(observer); create one with POST /observers")
    }

    /// A track's failure as the client is told it: an observer gone is
    /// refused as one never known is.
    static func trackError(_ error: any Error, observer: String) -> any Error {
        if let error = error as? ModelError, error.kind == .notFound { return unknownObserver(observer) }
        return error
    }

    /// A `200` JSON answer to a `GET`, or `304` when `If-None-Match` matches.
    /// `json` for a body that is written again as it is sent
    /// (`produce`), of the length and digest `streamed` measured.
    static func json(streamed: StreamedBody, request: HTTPRequest, cursor: Int64,
                     produce: @escaping @Sendable (BodyStream) -> Void, onEnd: @escaping @Sendable () -> Void) -> HTTPResponse
    {
        var response = json([], etag: EntityTag.of(digest: streamed.digest), request: request, cursor: cursor)
        if response.status == 200 { response.bodyStream = BodyStream(length: streamed.length, produce: produce, onEnd: onEnd) }
        return response
    }

    static func json(_ body: [UInt8], request: HTTPRequest, cursor: Int64? = nil) -> HTTPResponse {
        json(body, etag: EntityTag.of(body), request: request, cursor: cursor)
    }

    private static func json(_ body: [UInt8], etag: String, request: HTTPRequest, cursor: Int64?) -> HTTPResponse {
        // The headers are distinct: appended without `setHeader`'s search.
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(4)
        var response: HTTPResponse
        if let match = request.header("If-None-Match"), EntityTag.list(match, contains: etag, weak: true) {
            response = HTTPResponse(status: 304)
        } else {
            response = HTTPResponse(status: 200, body: body)
            headers.append(("Content-Type", "application/json"))
        }
        headers.append(("ETag", etag))
        headers.append(("Cache-Control", "no-cache"))
        if let cursor { headers.append(("Observation-Cursor", String(cursor))) }
        response.headers = headers
        return response
    }

    /// Commits `prepared` together with the writes waiting beside it and
    /// answers with `answer`'s response (problem+json when it failed): at
    /// once when it was committed on this thread, else from the committing
    /// thread, the connection suspended until then.
    func commit(_ context: RouteContext, _ prepared: PreparedWrite<Answer>) throws -> Reply {
        let prepared = clients.isTrusted(context) ? prepared.exemptingQuotas() : prepared
        let suspension = Suspension()
        let outcome = store.submit(prepared, wait: {
            suspension.connection = context.connection.suspend()
            return suspension.connection != nil
        }, then: { result in
            suspension.connection?.answer(context.finish(result.map(Self.answer)))
        })
        guard let outcome else { return .parked }
        return .response(Self.answer(try outcome.get()))
    }

    /// The connection a queued write answers.
    ///
    /// `@unchecked Sendable`: set while the write is queued, under the
    /// queue's lock, and read by the committing thread after it took the
    /// write under that same lock.
    final class Suspension: @unchecked Sendable {
        var connection: SuspendedConnection?
    }

    /// The response to a write: `200` with its representation as JSON and
    /// its ETag, `201` with where a created resource lives too, or `204`
    /// when it removed what it changed.
    static func answer(_ answer: Answer) -> HTTPResponse {
        let status: Int, location: String?
        switch answer.outcome {
        case .shown: (status, location) = (200, nil)
        case .created(let path): (status, location) = (201, path)
        case .removed: (status, location) = (204, nil)
        }
        guard let body = answer.body else { return HTTPResponse(status: status) }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("ETag", EntityTag.of(body))]
        if let location { headers.append(("Location", location)) }
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}

/// The last answer to each read (its path and query: a read's answer
/// depends on nothing else but the state), kept while the state it shows is
/// the current one: a read asked again and again between two
/// writes (`GET /truck/orderCount` under load) is rendered, hashed and handed
/// to libmicrohttpd once, and every connection queues that one response.
/// Bounded: it starts afresh past `limit` entries, and when a read of
/// another state is kept.
final class ReadAnswers: Sendable {
    private struct Entry {
        let snapshot: Store.Snapshot
        let representation: Representation
        let response: HTTPResponse
    }

    static let limit = 64
    private let entries = Locked<[String: Entry]>([:])

    private static func key(_ path: String, _ query: [String: String]) -> String {
        guard !query.isEmpty else { return path }
        // Decoded values may hold `&` or `=`: each part is NUL-separated.
        return path + query.sorted { $0.key < $1.key }.map { "\u{0}" + $0.key + "\u{0}" + $0.value }.joined()
    }

    /// The answer kept for this read, if it shows `snapshot`.
    func answer(to path: String, query: [String: String], in snapshot: Store.Snapshot) -> (Representation, HTTPResponse)? {
        let key = Self.key(path, query)
        return entries.withLock { entries in
            guard let entry = entries[key], entry.snapshot === snapshot else { return nil }
            return (entry.representation, entry.response)
        }
    }

    /// Keeps `response` (prepared for libmicrohttpd once) as the answer to
    /// this read while `snapshot` is current.
    func keep(_ representation: Representation, _ response: HTTPResponse, for path: String, query: [String: String], in snapshot: Store.Snapshot) {
        var response = response
        response.share()
        let entry = Entry(snapshot: snapshot, representation: representation, response: response)
        let key = Self.key(path, query)
        let replaced = entries.withLock { entries -> [String: Entry]? in
            // All entries show one state: those of another (older) state are
            // answered no more, and would keep that state alive.
            if let any = entries.first?.value, any.snapshot !== snapshot || (entries.count >= Self.limit && entries[key] == nil) {
                defer { entries = [key: entry] }
                return entries
            }
            entries[key] = entry
            return nil
        }
        // The old entries (and the states they hold) go after the lock.
        withExtendedLifetime(replaced) {}
    }
}
