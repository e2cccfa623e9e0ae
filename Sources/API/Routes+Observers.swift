import Concurrency
import HTTPServer
import JSON
import ModelObservation
import ModelStore

extension ObservableAPI {
    static let limitRange = 1...1000
    static let defaultLimit = 100

    /// An observer's time to live, the one field `POST /observers` takes.
    static let ttlSeconds = Field.integer("ttlSeconds", range: Int64(Store.observerTTLRange.lowerBound)...Int64(Store.observerTTLRange.upperBound)).optional

    func addObserverRoutes(to router: Router) {
        router.post("/observers", access: .read) { [self] context in
            let body = try RequestBody.validated(context.request, fields: [Self.ttlSeconds], requireAll: false, emptyAllowed: true)
            let ttl = body.int("ttlSeconds") ?? Int64(Store.defaultObserverTTL)
            let observer = try store.createObserver(ttlSeconds: Int(ttl), owner: clients.client(of: context), now: ServerClock.wallSeconds)
            return .response(Self.answer(Answer(.created(path: "/observers/" + observer.id), body: JSONWriter.bytes(json(observer)))))
        }
        // Each observer route twice: with the id in the path, and as
        // `/observer…` with the id in the `Observer` header, so that it
        // need never be in a URL (where proxies log it).
        for base in ["/observers/:id", "/observer"] {
            addObserverRoutes(at: base, to: router)
        }
    }

    /// `path` as the debug log shows it: an observer's id, all it takes to
    /// use the observer, is left out (`/observers/…/changes`).
    static let loggedPath: @Sendable (String) -> String = { path in
        guard path.hasPrefix("/observers/") else { return path }
        let rest = path.dropFirst("/observers/".count)
        guard !rest.isEmpty else { return path }
        return "/observers/…" + (rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "")
    }

    /// The observer a route names: in its path, or on `/observer…` in the
    /// `Observer` header.
    static func observerId(_ context: RouteContext) throws -> String {
        if let id = context.parameters["id"] { return id }
        guard let id = context.request.header("Observer"), !id.isEmpty else {
            throw APIError(400, "the Observer header names the observer (\(context.route))")
        }
        return id
    }

    private func addObserverRoutes(at base: String, to router: Router) {
        router.get(base) { [self] context in
            let id = try Self.observerId(context)
            try store.synchronize()
            // The cursor last answered through any instance.
            try store.refreshCursor(of: id)
            guard let observer = store.touchedObserver(id, now: ServerClock.wallSeconds) else {
                throw APIError(404, "no observer \(id)")
            }
            return .response(Self.json(JSONWriter.bytes(json(observer)), request: context.request, cursor: store.lastSeq))
        }
        router.delete(base, access: .read) { [self] context in
            let waiter = try store.deleteObserver(Self.observerId(context))
            feed.observerDeleted(waiter)
            return .response(Self.answer(.removed))
        }
        router.delete(base + "/reads", access: .read) { [self] context in
            try store.clearReads(of: Self.observerId(context), now: ServerClock.wallSeconds)
            return .response(Self.answer(.removed))
        }
        router.get(base + "/changes") { [self] context in
            let request = context.request
            let query = request.query
            let id = try Self.observerId(context)
            var since = try query["since"].map { try Self.nonNegativeInteger($0, "since") }
            let limit = try query["limit"].map { try Self.nonNegativeInteger($0, "limit") } ?? Int64(Self.defaultLimit)
            guard Self.limitRange.contains(Int(clamping: limit)) else {
                throw APIError(400, "limit must be between \(Self.limitRange.lowerBound) and \(Self.limitRange.upperBound)")
            }
            let coalesce = try Self.flag(query["coalesce"], "coalesce")
            let repair = try Self.flag(query["repair"], "repair")
            try store.synchronize()
            // A HEAD is answered as a poll's: it has no body to stream.
            if request.method == "GET", Self.acceptsEventStream(request.header("Accept")) {
                // A reconnecting EventSource names the last event it had, and
                // asks the same URL again: the later of the two is where it
                // stands, so a `since` in its URL repeats nothing.
                if let last = request.header("Last-Event-ID"), !last.isEmpty {
                    let lastEvent = try Self.nonNegativeInteger(last, "Last-Event-ID")
                    since = max(since ?? lastEvent, lastEvent)
                }
                if since == nil { try store.refreshCursor(of: id) }
                return try feed.stream(id, since: since, coalesce: coalesce, repair: repair,
                                   context: context.answer, connection: context.connection, client: clients.client(of: context))
            }
            // `Prefer: wait=N` (RFC 7240) is `timeout=N`; the query wins.
            let timeout: Duration
            if let text = query["timeout"] {
                timeout = try Self.seconds(text, "timeout", max: limits.maxLongPoll)
            } else if let wait = Self.preferredWait(request.header("Prefer")) {
                let applied = min(wait, limits.maxLongPoll)
                timeout = .seconds(applied)
                // On every answer to the poll, given now or when it wakes.
                context.carry("Preference-Applied", "wait=\(applied)")
            } else {
                timeout = .seconds(limits.defaultLongPoll)
            }
            return try feed.poll(id, since: since, limit: Int(limit), coalesce: coalesce, repair: repair,
                             timeout: timeout, context: context.answer, connection: context.connection)
        }
    }

    /// `true`, `false` or absent (false).
    static func flag(_ text: String?, _ name: String) throws -> Bool {
        switch text {
        case nil, "false": return false
        case "true": return true
        case let other?: throw APIError(400, "\(name) must be true or false, not \(other)")
        }
    }

    /// Whether `Accept` asks for `text/event-stream`.
    static func acceptsEventStream(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return accept.split(separator: ",").contains { range in
            range.split(separator: ";").first.map { $0.trimmingSpaces.lowercased() == "text/event-stream" } ?? false
        }
    }

    /// The seconds of a `Prefer: wait=N` preference (RFC 7240), if any.
    static func preferredWait(_ prefer: String?) -> Int? {
        guard let prefer else { return nil }
        for preference in prefer.split(separator: ",") {
            let parts = preference.split(separator: ";").first?.split(separator: "=", maxSplits: 1) ?? []
            guard parts.count == 2, parts[0].trimmingSpaces.lowercased() == "wait" else { continue }
            var value = parts[1].trimmingSpaces
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            if let seconds = Int(value), seconds >= 0 { return seconds }
        }
        return nil
    }

    func json(_ observer: ObserverSnapshot) -> JSONValue {
        let (reads, shapes) = store.describeReads(of: observer)
        return [
            "id": .string(observer.id),
            "reads": .array(reads.map(JSONValue.string)),
            "shapes": .array(shapes),
            "cursor": .int(observer.cursor),
            "ttlSeconds": .int(Int64(observer.ttlSeconds)),
        ]
    }

    static func nonNegativeInteger(_ text: String, _ name: String) throws -> Int64 {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text) else {
            throw APIError(400, "\(name) must be a non-negative integer, not \"\(text)\"")
        }
        return value
    }

    /// Seconds as a decimal number (`12`, `0.5`, `1e-3`), from 0 to `max`.
    static func seconds(_ text: String, _ name: String, max: Int) throws -> Duration {
        let allowed = Set("0123456789.eE+-".utf8)
        let valid = !text.isEmpty && text.utf8.allSatisfy { allowed.contains($0) }
        guard valid, let value = Double(text), value.isFinite, value >= 0, value <= Double(max) else {
            throw APIError(400, "\(name) must be a number of seconds from 0 to \(max), not \"\(text)\"")
        }
        return .milliseconds(Int64((value * 1000).rounded()))
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
