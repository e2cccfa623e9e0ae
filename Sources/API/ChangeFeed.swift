import HTTPServer
import JSON
import ModelObservation
import ModelStore
import Concurrency

/// The long-polling change feed: answers `GET /observers/{id}/changes` at
/// once when there is something to say, parks it otherwise, and answers
/// parked polls when a change they read is committed.
final class ChangeFeed: Sendable {
    /// A parked `changes` request: the registry keeps its state (claimed,
    /// expired), this its connection and what finishes its answer.
    final class ParkedPoll: PollWaiter, @unchecked Sendable {
        // Safe to share: `context` is set once, `parked` is locked.
        /// What finishes every answer to this poll (its headers, its count).
        let context: AnswerContext
        let parked = Locked<ParkedConnection?>(nil)

        init(observer: String, since: Int64?, limit: Int, coalesce: Bool, context: AnswerContext) {
            self.context = context
            super.init(observer: observer, since: since, limit: limit, coalesce: coalesce)
        }

        /// The poll's answer given later, finished as every answer is.
        func finish(_ outcome: Result<HTTPResponse, any Error>) -> HTTPResponse {
            context.finish(outcome)
        }

        var connection: ParkedConnection? { parked.withLock { $0 } }
    }

    let store: Store
    let metrics: Metrics
    /// Weak: the daemon owns the responder that owns this feed.
    private let daemon = Locked(Weak<HTTPDaemon>())
    /// Most event streams one client may hold open.
    let maxStreamsPerClient: Int
    /// Per client, the observers it has a stream open for, and how many
    /// (one, but for a moment when a stream takes the place of another).
    let streamsByClient = Locked<[String: [String: Int]]>([:])
    let streamRefusals = RefusalCounter()

    init(store: Store, metrics: Metrics, maxStreamsPerClient: Int = 64) {
        self.store = store
        self.metrics = metrics
        self.maxStreamsPerClient = maxStreamsPerClient
    }

    func attach(_ daemon: HTTPDaemon) {
        self.daemon.withLock { $0.object = daemon }
    }

    /// The store's door to the observers' consumers and changes.
    var feed: ObserverFeed { store.feed }

    /// Answers a poll now, or parks it for up to `timeout`: checked, then
    /// (when there is nothing to say yet) its connection parked, then
    /// checked again as its waiter registers, so that a change committed
    /// in between answers it.
    func poll(_ observer: String, since: Int64?, limit: Int, coalesce: Bool, repair: Bool = false, timeout: Duration,
              context: AnswerContext, connection: Connection) throws -> Reply
    {
        // Without `since`, the cursor last answered through any instance.
        var saved: Int64?
        if since == nil { saved = try store.refreshCursor(of: observer) }
        // The observer's consumer from now on, through any instance: told
        // to the others before it parks or is answered, so that an older
        // consumer's announcement heard from now on is known to be older.
        store.announceConsumer(observer)
        let waiter = ParkedPoll(observer: observer, since: since, limit: limit, coalesce: coalesce, context: context)
        // A poll is the observer's consumer: a stream open for it ends, in
        // the same operation as the poll, parked or delivering now (it
        // stops before its next answer).
        var (result, displaced, ended) = feed.poll(observer, since: since, limit: limit, coalesce: coalesce,
                                                   now: ServerClock.wallSeconds, parking: timeout > .zero ? .ask : .never)
        var givingWay = ended + [displaced].compactMap { $0 }
        if case .nothingYet = result {
            let parked = connection.park(timeout: timeout, onDeadline: { [self] in
                waiter.expire()
                return self.answerAtDeadline(waiter)
            })
            if let parked { waiter.parked.withLock { $0 = parked } }
            (result, displaced, ended) = feed.poll(observer, since: since, limit: limit, coalesce: coalesce, now: ServerClock.wallSeconds,
                                                   parking: parked != nil ? .waiter(waiter) : .never)
            givingWay += ended + [displaced].compactMap { $0 }
            if !givingWay.isEmpty { giveWay(givingWay.map { (observer, $0) }) }
            if case .parked = result { return .parked }
            if let parked {
                // Parked, then answered by what came in between: through
                // the parked connection, claimed for this.
                let outcome: Result<HTTPResponse, any Error>
                do {
                    outcome = try answer(result, of: waiter, repair: repair, saved: saved)
                } catch {
                    outcome = .failure(error)
                }
                resume([(parked, waiter.finish(outcome))])
                return .parked
            }
        } else if !givingWay.isEmpty {
            giveWay(givingWay.map { (observer, $0) })
        }
        return .response(try answer(result, of: waiter, repair: repair, saved: saved).get())
    }

    /// The answer to a poll not parked, or why there is none: not finished
    /// yet (the pipeline finishes it, or `ParkedPoll.finish` where it was
    /// parked before it was answered).
    private func answer(_ result: ObservationRegistry.Poll, of waiter: ParkedPoll, repair: Bool,
                        saved: Int64?) throws -> Result<HTTPResponse, any Error>
    {
        let observer = waiter.observer
        switch result {
        case .gone where repair:
            // Past retention: the current value of everything it reads, at once.
            let repaired = try store.repair(observer, since: waiter.since ?? feed.cursor(of: observer) ?? 0)
            try store.saveCursors([(observer, repaired.cursor)])
            return .success(Self.feedResponse(repaired.changes, cursor: repaired.cursor))
        case .changes(_, let cursor):
            // The next poll may come through another instance, without
            // `since`: saved, unless it is the one just read back.
            if cursor != saved { try store.saveCursors([(observer, cursor)]) }
            return Self.response(for: result)
        default:
            return Self.response(for: result)
        }
    }

    /// Answers parked polls that gave way to a newer poll of their observer
    /// (one parked poll per observer): with no changes, at their cursor.
    func giveWay(_ displaced: [(observer: String, waiter: ChangeWaiter)]) {
        var answers: [(ParkedConnection, HTTPResponse)] = []
        for (observer, waiter) in displaced {
            if let stream = waiter as? StreamingPoll {
                stream.stream.close()
                continue
            }
            guard let poll = waiter as? ParkedPoll, let connection = poll.connection, poll.claim() else { continue }
            let cursor = poll.since ?? feed.cursorOrNewest(of: observer)
            answers.append((connection, poll.finish(.success(Self.feedResponse([], cursor: cursor)))))
        }
        resume(answers)
    }

    /// Answers the parked polls of observers that have something new, and
    /// parks again those whose changes fold to nothing (`coalesce`).
    func wake(_ woken: [(observer: String, waiter: ChangeWaiter)]) {
        var answers: [(ParkedConnection, HTTPResponse)] = []
        answers.reserveCapacity(woken.count)
        // A change many read gives many of them the same answer: it is
        // built once, and libmicrohttpd holds one copy of it for all.
        var same: [SameAnswer: HTTPResponse] = [:]
        // Saved, where instances share them, before any answer goes out.
        let sharing = store.sharesCursors
        var cursors: [(id: String, cursor: Int64)] = []
        var streams: [StreamingPoll] = []
        for (_, waiter) in woken {
            if let stream = waiter as? StreamingPoll {
                streams.append(stream)
                continue
            }
            guard let poll = waiter as? ParkedPoll, let connection = poll.connection else { continue }
            // Parked again only while its deadline has not passed (the
            // deadline sets `expired` before it withdraws the waiter), and
            // not in place of a newer poll.
            // (With the planted fault `wake-every-poll`, answered even when
            // nothing it read changed.)
            let parkAgain = PlantedFault.current != .wakeEveryPoll
            let answer = feed.repoll(poll, parkAgain: parkAgain, now: ServerClock.wallSeconds)
            // Its deadline, or a newer poll, answers it.
            guard let result = answer else { continue }
            if case .parked = result { continue }
            if sharing, case .changes(_, let cursor) = result { cursors.append((poll.observer, cursor)) }
            // What a query says differs from one reader to the next (its
            // `query`, the fields it shows, an insert for one and a remove
            // for another): such an answer is its own.
            if case .changes(let changes, let cursor) = result, poll.context.headers.isEmpty, !changes.contains(where: { $0.query != nil }) {
                let key = SameAnswer(cursor: cursor, seqs: changes.map(\.seq), coalesce: poll.coalesce)
                if let index = same.index(forKey: key) {
                    same.values[index].share()
                    answers.append((connection, poll.finish(.success(same.values[index]))))
                } else {
                    let response = Self.feedResponse(changes, cursor: cursor)
                    same[key] = response
                    answers.append((connection, poll.finish(.success(response))))
                }
                continue
            }
            answers.append((connection, poll.finish(Self.response(for: result))))
        }
        metrics.recordWakeups(answers.count)
        saveCursors(cursors)
        resume(answers)
        wakeStreams(streams)
    }

    /// Saves answered cursors where instances share them; a failure is
    /// logged, the answers still go out (the database is unreachable: a
    /// poll through another instance would fail as well).
    func saveCursors(_ cursors: [(id: String, cursor: Int64)]) {
        do { try store.saveCursors(cursors) } catch { store.logger.warning("could not save answered cursors: \(error)") }
    }

    /// What makes two woken polls' answers the same.
    private struct SameAnswer: Hashable {
        let cursor: Int64
        let seqs: [Int64]
        let coalesce: Bool
    }

    /// Answers the parked poll of a deleted observer.
    func observerDeleted(_ waiter: ChangeWaiter?) {
        if let stream = waiter as? StreamingPoll { stream.stream.close() }
        guard let poll = waiter as? ParkedPoll, let connection = poll.connection, poll.claim() else { return }
        resume([(connection, poll.finish(.failure(APIError(404, "observer \(poll.observer) was deleted"))))])
    }

    func resume(_ answers: [(ParkedConnection, HTTPResponse)]) {
        guard !answers.isEmpty, let daemon = daemon.withLock({ $0.object }) else { return }
        daemon.resume(answers)
    }

    /// What a parked poll answers at its deadline: its changes, or none
    /// with the cursor, which is saved where instances share it. Nil when
    /// a wake, a newer poll or a deletion took the answering on itself.
    private func answerAtDeadline(_ poll: ParkedPoll) -> HTTPResponse? {
        let answered = feed.answerAtDeadline(poll, now: ServerClock.wallSeconds)
        guard let (result, before) = answered else { return nil }
        // Saved only when it moved: many polls may pass their deadline at once.
        if case .changes(_, let cursor) = result, cursor != before { saveCursors([(poll.observer, cursor)]) }
        return poll.finish(Self.response(for: result))
    }

    /// A poll's answer, or why there is none.
    static func response(for poll: ObservationRegistry.Poll) -> Result<HTTPResponse, any Error> {
        switch poll {
        case .unknownObserver: return .failure(APIError(404, "no such observer"))
        case .gone(let oldest): return .failure(Problem.gone(prunedThrough: oldest))
        case .ahead(let newest): return .failure(APIError(400, "since is ahead of the newest change \(newest)"))
        case .changes(let changes, let cursor): return .success(feedResponse(changes, cursor: cursor))
        case .parked, .nothingYet: return .failure(APIError(500, "unexpected parked poll"))
        }
    }

    static func feedResponse(_ changes: [Change], cursor: Int64) -> HTTPResponse {
        var body: [UInt8] = []
        write(changes, cursor: cursor, into: &body)
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Observation-Cursor", String(cursor)),
                                                   ("Cache-Control", "no-store")], body: body)
    }

    /// The feed's answer (a poll's body, an event's data): the cursor and
    /// the changes, in order.
    static func write(_ changes: some Collection<Change>, cursor: Int64, into body: inout [UInt8]) {
        var object = JSONObjectWriting(into: &body)
        object.member("cursor", cursor, into: &body)
        object.member("changes", elements: changes, into: &body) { change, body in write(change, into: &body) }
        object.end(into: &body)
    }

    /// One change: `old` is left out of an insert and a repair, `new` out
    /// of a remove.
    static func write(_ change: Change, into body: inout [UInt8]) {
        var object = JSONObjectWriting(into: &body)
        object.member("seq", change.seq, into: &body)
        object.member("path", change.path, into: &body)
        object.member("op", change.operation.rawValue, into: &body)
        if change.operation != .insert && change.operation != .repair {
            object.member("old", json: change.old, into: &body)
        }
        if change.operation != .remove {
            object.member("new", json: change.new, into: &body)
        }
        // Said to a query's reader: which of its reads it is for.
        if let query = change.query { object.member("query", query, into: &body) }
        object.end(into: &body)
    }
}
