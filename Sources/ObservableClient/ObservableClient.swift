import Foundation
import JSON
import Observation

/// A connection to an observable-server: loads its models as `@Observable`
/// objects and keeps them current, property by property, from one change feed.
///
/// ```swift
/// let client = ObservableClient(baseURL: URL(string: "http://localhost:8080")!)
/// let truck = try await client.truck()
/// withObservationTracking { _ = truck.orderCount } onChange: { print("orderCount changed") }
/// ```
///
/// The client holds one observer on the server. Every load is a `GET` with
/// it, so the server tracks exactly what was loaded; one feed (an event
/// stream, else long-polling) brings each transaction's changes, applied at
/// once on the client's actor (`isolation`: by default the one it is made
/// on, the main actor in an app). Each server element is one object for as
/// long as the client lives. Call `close()` when done: the feed holds the client.
public final class ObservableClient: Observable, @unchecked Sendable {
    /// How the client connects and pages; the defaults suit most apps.
    public struct Configuration: Sendable {
        /// How the feed reaches the client.
        public var transport: Transport
        /// Orders per page of `truck.orders`, 1…1000.
        public var ordersPageSize: Int
        /// The observer's time to live on the server, in seconds (nil: the server's default, 600).
        public var observerTTL: Int?
        /// A stream that sends nothing, not even a heartbeat, for this long is
        /// reconnected. Keep it above the server's `--heartbeat` (15 s by default).
        public var silenceTimeout: Duration
        /// The shortest and the longest wait before reconnecting; the wait
        /// doubles from one failure to the next, with jitter.
        public var reconnectDelay: ClosedRange<Double>
        /// How long one long-poll waits on the server, in seconds.
        public var longPollTimeout: Double
        /// Seconds a load or a write may take, its whole answer included;
        /// past it, it throws `.unreachable`.
        public var requestTimeout: Double

        /// A configuration; each argument left out keeps its default.
        ///
        /// - Parameters:
        ///   - transport: `.automatic` (an event stream, long-polling where
        ///     none can open) or `.longPolling`.
        ///   - ordersPageSize: orders per page of `truck.orders`, 1…1000.
        ///   - observerTTL: the observer's time to live on the server, in
        ///     seconds; nil for the server's default (600).
        ///   - silenceTimeout: a stream silent this long is reconnected.
        ///   - reconnectDelay: the shortest and longest wait before reconnecting, in seconds.
        ///   - longPollTimeout: seconds one long-poll waits on the server.
        ///   - requestTimeout: seconds a load or a write may take.
        public init(transport: Transport = .automatic, ordersPageSize: Int = 50, observerTTL: Int? = nil,
                    silenceTimeout: Duration = .seconds(45), reconnectDelay: ClosedRange<Double> = 0.1...10,
                    longPollTimeout: Double = 25, requestTimeout: Double = 30)
        {
            self.transport = transport
            self.ordersPageSize = ordersPageSize
            self.observerTTL = observerTTL
            self.silenceTimeout = silenceTimeout
            self.reconnectDelay = reconnectDelay
            self.longPollTimeout = longPollTimeout
            self.requestTimeout = requestTimeout
        }
    }

    /// How the feed reaches the client.
    public enum Transport: Sendable, Equatable {
        /// An event stream, else long-polling where a stream cannot open.
        case automatic
        /// Long-polling only.
        case longPolling
    }

    /// Whether the client is in step with the server. Observable: a view can show it.
    public enum ConnectionState: Sendable, Equatable, CustomStringConvertible {
        /// Nothing loaded yet, so nothing to keep current.
        case idle
        /// Opening the feed for the first time.
        case connecting
        /// The feed is open; changes arrive as they are committed.
        case live(FeedKind)
        /// The feed broke; the client reconnects by itself and resumes where it
        /// left off. `attempt` counts the failures in a row.
        case reconnecting(attempt: Int, lastError: ObservableClientError?)
        /// `close()` was called.
        case closed

        /// `idle`, `connecting`, `live (stream)`, `live (long-polling)`,
        /// `reconnecting (attempt 2: unreachable: …)` or `closed`.
        public var description: String {
            switch self {
            case .idle: "idle"
            case .connecting: "connecting"
            case .live(let kind): "live (\(kind))"
            case .reconnecting(let attempt, let error):
                "reconnecting (attempt \(attempt)" + (error.map { ": \($0)" } ?? "") + ")"
            case .closed: "closed"
            }
        }
    }

    /// What carries the feed while it is live.
    public enum FeedKind: Sendable, Equatable, CustomStringConvertible {
        case stream, longPolling

        public var description: String {
            switch self {
            case .stream: "stream"
            case .longPolling: "long-polling"
            }
        }
    }

    /// Whether the client is in step with the server (observable).
    public var connectionState: ConnectionState {
        registrar.access(self, keyPath: \.connectionState)
        return _connectionState
    }

    /// Changes applied from the feed since the client started (observable).
    public var changesApplied: Int {
        registrar.access(self, keyPath: \.changesApplied)
        return _changesApplied
    }

    /// The server's address.
    public let baseURL: URL
    public let configuration: Configuration
    /// The actor the client and its objects belong to, where every
    /// transaction of the feed is applied (see `init`).
    public let isolation: any Actor

    var _connectionState = ConnectionState.idle
    var _changesApplied = 0
    let registrar = ObservationRegistrar()
    let transport: HTTPTransport

    // The observer and the feed.
    var observerID: String?
    var creatingObserver: Task<String, any Error>?
    /// The observer was replaced: what the objects hold must be read again.
    var needsReload = false
    /// The cursor of the last feed answer applied: where the feed goes on.
    var cursor: Int64 = 0
    var feedTask: Task<Void, Never>?
    var currentStream: EventStream?
    var streamUnsupported = false
    var failures = 0
    var isClosed = false

    // The objects: one per server element, by path.
    var objects: [String: any RemoteObject] = [:]
    /// How the values of a read now applied treat objects the client has already.
    var readContext = ReadContext(applies: false, cursor: 0)
    var loaded = LoadedResources()
    var pendingRefreshes: [String: UInt16] = [:]
    var refreshTask: Task<Void, Never>?
    /// The query lists, by collection path, `?` and canonical query.
    var queryLists: [String: any AnyQueryList] = [:]

    /// Whether a read's values replace those of objects already held: yes when
    /// the read is newer than the feed (then changes up to its cursor are
    /// skipped), or when the server did not track them (a new observer, a
    /// narrowing, a field read again).
    struct ReadContext {
        var applies: Bool
        var cursor: Int64
    }

    /// What was loaded, to read again with a new observer (besides the
    /// lists, which are read again when the client has them).
    struct LoadedResources {
        /// The paths of the singletons and lists loaded, and of the elements loaded by id.
        var singletons: Set<String> = [], lists: Set<String> = [], elements: Set<String> = []
    }

    /// Makes a client for the server at `baseURL`. Nothing is sent until the
    /// first load. `token` is the server's write token, if it has one.
    ///
    /// The client and its objects belong to `isolation`: by default the
    /// actor this is called on (the main actor in an app or a `main.swift`),
    /// the main actor when it is called outside any actor. Use them there;
    /// each transaction of the feed is applied there in one turn.
    public init(baseURL: URL, token: String? = nil, configuration: Configuration = Configuration(),
                isolation: (any Actor)? = #isolation)
    {
        self.isolation = isolation ?? MainActor.shared
        self.baseURL = baseURL
        self.configuration = configuration
        transport = HTTPTransport(baseURL: baseURL, token: token, requestTimeout: configuration.requestTimeout)
    }

    func setState(_ state: ConnectionState) {
        guard state != _connectionState else { return }
        registrar.withMutation(of: self, keyPath: \.connectionState) { _connectionState = state }
    }

    // MARK: Reads with the observer

    /// A `GET` with the observer. An observer the server no longer knows is
    /// replaced, and the read made again with the new one.
    func read(_ pathAndQuery: String) async throws -> HTTPAnswer {
        for attempt in 0..<3 {
            let observer = try await ensureObserver()
            let answer = try await transport.send("GET", pathAndQuery, headers: ["Observer": observer])
            if answer.status == 200 { return answer }
            if answer.status == 404, attempt < 2, try await observerIsGone(observer) {
                dropObserver(observer)
                continue
            }
            throw ObservableClientError.from(status: answer.status, body: answer.body)
        }
        throw ObservableClientError.unreachable("the server kept refusing new observers")
    }

    func observerIsGone(_ observer: String) async throws -> Bool {
        try await transport.send("GET", "/observer", headers: ["Observer": observer]).status == 404
    }

    /// Forgets an observer the server no longer knows; the next read or the
    /// feed makes a new one and reads again what the objects hold.
    func dropObserver(_ observer: String) {
        guard observerID == observer else { return }
        observerID = nil
        needsReload = true
        currentStream?.cancel()
    }

    /// The observer, made when there is none; after a replacement, what was
    /// loaded is read again with the new one first.
    func ensureObserver() async throws -> String {
        checkIsolation()
        if isClosed { throw ObservableClientError.closed }
        let observer: String
        if let observerID {
            observer = observerID
        } else if let creatingObserver {
            observer = try await creatingObserver.value
        } else {
            let task = spawn { try await $0.createObserver() }
            creatingObserver = task
            defer { creatingObserver = nil }
            observer = try await task.value
        }
        if needsReload {
            needsReload = false
            do {
                try await reloadAll()
            } catch {
                needsReload = true
                throw error
            }
        }
        startFeed()
        return observer
    }

    private func createObserver() async throws -> String {
        let body: JSONValue? = configuration.observerTTL.map { ["ttlSeconds": .int(Int64($0))] }
        let answer = try await transport.send("POST", "/observers", body: body)
        guard answer.status == 201, let json = answer.json, let id = json.id, let cursor = json["cursor"]?.intValue else {
            throw ObservableClientError.from(status: answer.status, body: answer.body)
        }
        observerID = id
        self.cursor = cursor
        // A new observer tracks nothing yet: every field is read again.
        for object in objects.values { object.trackedMask = type(of: object).allFields }
        return id
    }

    /// Reads again, with the (new) observer, everything the objects hold,
    /// taking the values as they are now.
    func reloadAll() async throws {
        for path in loaded.singletons.sorted() {
            guard let object = objects[path] else { continue }
            if let truck = object as? Truck {
                // Its orders as far as they were paged.
                let (orders, next, answer) = try await readPages(firstRead(of: Truck.self), pages: truck.orderPages, key: "orders")
                guard let json = answer.json else { continue }
                readContext = ReadContext(applies: true, cursor: answer.cursor ?? 0)
                truck.load(json)
                truck.set("orders", .array(orders))
                readContext = ReadContext(applies: false, cursor: 0)
                truck.freshAt = answer.cursor ?? 0
                truck.nextOrders = next
            } else {
                take(try await read(firstRead(of: object)), into: object, force: true)
            }
        }
        for path in loaded.lists.sorted() {
            if let list = objects[path] as? any PagedList { try await reload(list) }
        }
        for list in queryLists.values {
            list.take(try await read(list.read), from: self)
        }
        for path in loaded.elements.sorted() {
            guard let object = objects[path] else { continue }
            do {
                take(try await read(path), into: object, force: true)
            } catch ObservableClientError.notFound {
                // Gone meanwhile: its list, read above, no longer holds it.
                loaded.elements.remove(path)
            }
        }
    }

    private func reload(_ list: some PagedList) async throws {
        let key = type(of: list).fields[0]
        let (elements, next, answer) = try await readPages(list.firstPageQuery(), pages: list.pages, key: key)
        readContext = ReadContext(applies: true, cursor: answer.cursor ?? 0)
        list.set(key, .array(elements))
        readContext = ReadContext(applies: false, cursor: 0)
        list.freshAt = max(list.freshAt, answer.cursor ?? 0)
        if list.pageSize != nil { list.nextPage = next }
    }

    // MARK: Writes

    /// Sends a write; its answer's JSON, or the typed error its status stands for.
    @discardableResult
    static func write(_ client: ObservableClient?, _ method: String, _ path: String, body: JSONValue? = nil,
                      ifMatch: JSONValue? = nil) async throws -> JSONValue?
    {
        guard let client, !client.isClosed else { throw ObservableClientError.closed }
        client.checkIsolation()
        var headers: [String: String] = [:]
        if let ifMatch { headers["If-Match"] = entityTag(of: JSONWriter.bytes(ifMatch)) }
        let answer = try await client.transport.send(method, path, body: body, headers: headers)
        guard (200..<300).contains(answer.status) else {
            throw ObservableClientError.from(status: answer.status, body: answer.body)
        }
        return answer.json
    }

    /// The server's strong tag of a representation: FNV-1a (64 bits) of its
    /// compact JSON, which the client writes exactly as the server does. So
    /// `If-Match` names the version the object shows, not the last one read.
    static func entityTag(of bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }

    // MARK: Closing

    /// Stops the feed and deletes the observer on the server. The objects
    /// keep their last values; loads and writes then throw `.closed`.
    public func close() async {
        checkIsolation()
        guard !isClosed else { return }
        isClosed = true
        feedTask?.cancel()
        currentStream?.cancel()
        refreshTask?.cancel()
        if let observerID {
            _ = try? await transport.send("DELETE", "/observer", headers: ["Observer": observerID], timeout: 5)
        }
        await feedTask?.value
        feedTask = nil
        observerID = nil
        setState(.closed)
    }
}
