import Concurrency
import HTTPServer
import JSON
import ModelObservation
import ModelStore

/// The change feed as a stream of Server-Sent Events (`Accept:
/// text/event-stream`): one event per transaction that concerns the
/// observer, resumable by `Last-Event-ID`.
extension ChangeFeed {
    /// An open stream, registered in the registry as its observer's waiter
    /// whenever it has nothing to send; the registry keeps its state
    /// (closed, superseded).
    final class StreamingPoll: StreamWaiter, @unchecked Sendable {
        // Safe to share: `cursor` and `sentRetry` are only touched by the
        // thread delivering to it, one at a time (under `delivering`).
        let observer: String
        let coalesce: Bool
        let stream: EventStream
        var cursor: Int64
        var sentRetry = false
        /// Changes taken for it, its cursor moved past them, not sent yet:
        /// a wake saves the cursors of all the streams it wakes at once,
        /// then sends (`wakeStreams`). Another delivery leaves them to it.
        var unsent: (changes: [Change], cursor: Int64)?
        let delivering = Locked(())

        init(observer: String, cursor: Int64, coalesce: Bool, stream: EventStream) {
            self.observer = observer
            self.cursor = cursor
            self.coalesce = coalesce
            self.stream = stream
        }
    }

    /// Milliseconds a client waits before it reconnects (the first event's `retry:`).
    static let retryMilliseconds = 2000

    /// Opens a stream for `observer` from `since` (already resolved from the
    /// query or `Last-Event-ID`; nil: the observer's cursor), for `client`
    /// (nil: one counted toward no client's quota).
    func stream(_ observer: String, since: Int64?, coalesce: Bool, repair: Bool,
                context: AnswerContext, connection: Connection, client: String? = nil) throws -> Reply
    {
        // The resume point is checked before the answer's headers go out.
        let checked: (cursor: Int64, gone: Int64?)
        switch feed.resumePoint(of: observer, since: since) {
        case .unknownObserver: throw APIError(404, "no observer \(observer)")
        case .ahead(let newest): throw APIError(400, "since is ahead of the newest change \(newest)")
        case .from(let cursor, let gone): checked = (cursor, gone)
        }
        if let client, !openStream(of: observer, for: client) {
            streamRefusals.record()
            throw APIError(
                429, "this client has \(maxStreamsPerClient) event streams open, the most one client may hold (--max-streams-per-client): close one first",
                headers: [("Retry-After", String(Self.streamRetryAfter))])
        }
        // Proxies that buffer (nginx) pass the events on at once.
        let head = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"),
                                                       ("X-Accel-Buffering", "no")])
        let holder = Locked<StreamingPoll?>(nil)
        // The opening is finished (and counted) as every answer is.
        guard let stream = connection.openStream(head: { context.finish(.success(head)) }, initial: Array(": observing \(observer)\n\n".utf8), onDrained: { [weak self] in
            // The client took what it was behind on: on with the rest.
            guard let self, let poll = holder.withLock({ $0 }) else { return }
            self.deliver(poll)
        }, onEnd: { [weak self] in
            guard let self else { return }
            if let client { self.streamEnded(of: observer, for: client) }
            guard let poll = holder.withLock({ $0 }) else { return }
            self.feed.closeStream(poll, of: observer)
        }) else {
            if let client { streamEnded(of: observer, for: client) }
            throw APIError(503, "the server is stopping")
        }
        let poll = StreamingPoll(observer: observer, cursor: checked.cursor, coalesce: coalesce, stream: stream)
        holder.withLock { $0 = poll }
        if let oldest = checked.gone {
            guard repair, let repaired = try? store.repair(observer, since: checked.cursor) else {
                let gone = Problem.gone(prunedThrough: oldest)
                stream.send(Self.event("gone", id: nil, data: Problem.json(410, "Gone", gone.detail, extensions: gone.extensions)))
                stream.close()
                return .parked
            }
            // Saved before it is sent, as every answer.
            saveCursors([(observer, repaired.cursor)])
            poll.delivering.withLock { _ in
                send(repaired.changes, cursor: repaired.cursor, to: poll, asOne: true)
                poll.cursor = repaired.cursor
            }
        }
        // The observer's one consumer: a poll or stream parked before, or a
        // stream delivering now, gives way; through any instance, told to
        // the others first (an older consumer's announcement heard from
        // then on is known to be older).
        store.announceParked(observer, stream: true)
        let (displaced, earlier) = feed.openStream(poll, of: observer)
        if let displaced { giveWay([(observer, displaced)]) }
        (earlier as? StreamingPoll)?.stream.close()
        deliver(poll)
        return .parked
    }

    /// Counts a stream of `observer` open for `client`; false when the
    /// client has `maxStreamsPerClient` open already, for other observers
    /// (one that takes the place of a stream of the same observer, which
    /// it ends, is let in).
    private func openStream(of observer: String, for client: String) -> Bool {
        streamsByClient.withLock { clients in
            let open = clients[client, default: [:]]
            guard open[observer] != nil || open.count < maxStreamsPerClient else { return false }
            clients[client, default: [:]][observer, default: 0] += 1
            return true
        }
    }

    /// Counts out a stream of `observer` that `client` had open.
    private func streamEnded(of observer: String, for client: String) {
        streamsByClient.withLock { clients in
            guard let open = clients[client]?[observer] else { return }
            if open > 1 {
                clients[client]![observer] = open - 1
            } else if clients[client]!.count > 1 {
                clients[client]![observer] = nil
            } else {
                clients[client] = nil
            }
        }
    }

    /// Seconds a client at its quota of streams is told to wait.
    static let streamRetryAfter = 5

    /// Sends `poll` what its observer has after its cursor, one event per
    /// transaction (one for all with `coalesce`), then parks it again. A
    /// client that does not keep up is sent no more until it has taken what
    /// it was sent (the stream's `onDrained` delivers again). Where
    /// instances share cursors, each cursor is saved before its events go
    /// out, as a poll's is before its answer: a client that has an event
    /// and polls through another instance goes on after it.
    func deliver(_ poll: StreamingPoll) {
        let sharing = store.sharesCursors
        poll.delivering.withLock { _ in
            // A wake has taken changes for it and sends them once their
            // cursor is saved; it delivers the rest after.
            guard poll.unsent == nil else { return }
            while let (changes, cursor) = take(for: poll) {
                if sharing { saveCursors([(poll.observer, cursor)]) }
                send(changes, cursor: cursor, to: poll, asOne: poll.coalesce)
            }
        }
    }

    /// Delivers to streams a commit woke. Where instances share cursors,
    /// the changes for each are taken first, their cursors saved in one
    /// write, and only then sent.
    func wakeStreams(_ streams: [StreamingPoll]) {
        guard store.sharesCursors else {
            for poll in streams { deliver(poll) }
            return
        }
        var taken: [StreamingPoll] = []
        var cursors: [(id: String, cursor: Int64)] = []
        for poll in streams {
            poll.delivering.withLock { _ in
                guard poll.unsent == nil, let (changes, cursor) = take(for: poll) else { return }
                poll.unsent = (changes, cursor)
                taken.append(poll)
                cursors.append((poll.observer, cursor))
            }
        }
        saveCursors(cursors)
        for poll in taken {
            poll.delivering.withLock { _ in
                if let (changes, cursor) = poll.unsent { send(changes, cursor: cursor, to: poll, asOne: poll.coalesce) }
                poll.unsent = nil
            }
            deliver(poll)
        }
    }

    /// The next changes for `poll` after its cursor, which moves past them;
    /// nil when it has none to send now (parked again, blocked, closed:
    /// a `gone` event sent first where its cursor is past retention).
    /// Under `poll.delivering`.
    private func take(for poll: StreamingPoll) -> (changes: [Change], cursor: Int64)? {
        guard poll.stream.isOpen, !poll.stream.isBlocked else { return nil }
        let answer = feed.pollStream(poll, of: poll.observer, since: poll.cursor, limit: 1000, coalesce: poll.coalesce,
                                     now: ServerClock.wallSeconds)
        guard let result = answer else {
            poll.stream.close()
            return nil
        }
        switch result {
        case .parked, .nothingYet:
            return nil
        case .changes(let changes, let cursor):
            guard !changes.isEmpty else {
                // Another consumer parked meanwhile: this stream gives way.
                poll.stream.close()
                return nil
            }
            poll.cursor = cursor
            return (changes, cursor)
        case .unknownObserver, .ahead:
            poll.stream.close()
        case .gone(let oldest):
            let gone = Problem.gone(prunedThrough: oldest)
            poll.stream.send(Self.event("gone", id: nil, data: Problem.json(410, "Gone", gone.detail, extensions: gone.extensions)))
            poll.stream.close()
        }
        return nil
    }

    /// Writes `changes` as events: one per transaction, or one in all.
    private func send(_ changes: [Change], cursor: Int64, to poll: StreamingPoll, asOne: Bool) {
        var groups: [[Change]] = []
        if asOne {
            groups = [changes]
        } else {
            for change in changes {
                if let last = groups.last?.last, last.transaction == change.transaction {
                    groups[groups.count - 1].append(change)
                } else {
                    groups.append([change])
                }
            }
        }
        var bytes: [UInt8] = []
        for (index, group) in groups.enumerated() {
            // `id`: the seq of the event's last change. `cursor`: what a
            // poll would answer, the page's cursor on its last event.
            let id = group.last?.seq ?? cursor
            let eventCursor = index == groups.count - 1 ? max(cursor, id) : id
            var data: [UInt8] = []
            Self.write(group, cursor: eventCursor, into: &data)
            if !poll.sentRetry {
                bytes.append(contentsOf: "retry: \(Self.retryMilliseconds)\n".utf8)
                poll.sentRetry = true
            }
            bytes.append(contentsOf: Self.event("changes", id: id, data: data))
        }
        poll.stream.send(bytes)
    }

    static func event(_ name: String, id: Int64?, data: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        if let id { bytes.append(contentsOf: "id: \(id)\n".utf8) }
        bytes.append(contentsOf: "event: \(name)\ndata: ".utf8)
        // The JSON is on one line: it holds no raw line break.
        bytes.append(contentsOf: data)
        bytes.append(contentsOf: "\n\n".utf8)
        return bytes
    }
}

extension ChangeFeed: QuotaReporting {
    var quotaReports: [QuotaReport] {
        let largest = streamsByClient.withLock { $0.values.map(\.count).max() ?? 0 }
        return [QuotaReport("streams_per_client", limit: maxStreamsPerClient, used: largest, refusals: streamRefusals)]
    }
}
