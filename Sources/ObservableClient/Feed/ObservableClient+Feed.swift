import Foundation
import JSON

/// Why the feed must start over in another way.
enum FeedRestart: Error {
    /// The server no longer knows the observer (expired, deleted, or its
    /// cursor is unusable): make a new one and read again.
    case observerGone
    /// The server answered the stream request with something else than a
    /// stream: poll instead.
    case streamUnsupported
    /// The server asked to wait before trying again.
    case retryAfter(Double, ObservableClientError)
}

extension ObservableClient {
    /// Starts the feed, once: it runs until `close()`.
    func startFeed() {
        guard feedTask == nil, !isClosed else { return }
        if _connectionState == .idle { setState(.connecting) }
        feedTask = spawn { await $0.runFeed() }
    }

    /// Keeps the feed open: reconnects after any failure with exponential
    /// backoff and jitter, resuming from the last applied cursor.
    func runFeed() async {
        var lastError: ObservableClientError?
        while !isClosed, !Task.isCancelled {
            var wait: Double?
            do {
                let observer = try await ensureObserver()
                if configuration.transport == .automatic, !streamUnsupported {
                    try await runStream(observer)
                } else {
                    try await runPolls(observer)
                }
                // The server ended the stream (it stops, or another consumer
                // took the observer's place): reconnect at once.
                lastError = nil
            } catch FeedRestart.observerGone {
                if let observerID { dropObserver(observerID) }
                continue
            } catch FeedRestart.streamUnsupported {
                streamUnsupported = true
                continue
            } catch FeedRestart.retryAfter(let seconds, let error) {
                failures += 1
                lastError = error
                wait = seconds
            } catch is CancellationError {
                break
            } catch ObservableClientError.closed {
                break
            } catch let error as ObservableClientError {
                failures += 1
                lastError = error
            } catch EventStream.Ending.silent {
                failures += 1
                lastError = .unreachable("the stream was silent for \(configuration.silenceTimeout)")
            } catch {
                failures += 1
                lastError = .unreachable("\(error)")
            }
            if isClosed { break }
            setState(.reconnecting(attempt: failures, lastError: lastError))
            if failures > 0 {
                let range = configuration.reconnectDelay
                let backoff = min(range.upperBound, range.lowerBound * pow(2, Double(min(failures - 1, 20))))
                let delay = max(wait ?? 0, backoff * Double.random(in: 0.5...1.0))
                try? await Task.sleep(for: .seconds(delay))
            }
        }
    }

    /// Reads the event stream until it ends.
    func runStream(_ observer: String) async throws {
        let request = transport.request(
            "GET", "/observer/changes?repair=true&since=\(cursor)",
            headers: ["Observer": observer, "Accept": "text/event-stream"])
        let timeout = configuration.silenceTimeout.components
        let stream = EventStream(
            request: request, silenceTimeout: Double(timeout.seconds) + Double(timeout.attoseconds) / 1e18)
        currentStream = stream
        defer {
            stream.cancel()
            if currentStream === stream { currentStream = nil }
        }
        stream.start()
        for try await item in stream.items {
            switch item {
            case .opened(let status, let contentType, let retryAfter):
                if status == 200, contentType.hasPrefix("text/event-stream") {
                    failures = 0
                    setState(.live(.stream))
                } else {
                    try answer(status: status, retryAfter: retryAfter, streamRequest: true)
                }
            case .changes(let answer):
                apply(answer)
                // Let what the transaction woke run (a Task that tracks
                // again, a redraw) before the next transaction lands.
                await Task.yield()
            case .gone:
                throw FeedRestart.observerGone
            }
        }
    }

    /// Long-polls until a poll fails.
    func runPolls(_ observer: String) async throws {
        // The first poll answers at once, so the client knows it is in step.
        var timeout = 0.0
        while !isClosed {
            defer { timeout = configuration.longPollTimeout }
            let answer = try await transport.send(
                "GET", "/observer/changes?repair=true&limit=1000&since=\(cursor)&timeout=\(timeout)",
                headers: ["Observer": observer], timeout: timeout + 15)
            guard answer.status == 200 else {
                try self.answer(status: answer.status, retryAfter: answer.headers["retry-after"].flatMap(Double.init),
                                body: answer.body, streamRequest: false)
                return
            }
            failures = 0
            setState(.live(.longPolling))
            if let json = answer.json, let feed = FeedAnswer(json: json) { apply(feed) }
        }
    }

    /// What a feed answer other than a good one means.
    private func answer(status: Int, retryAfter: Double?, body: Data = Data(), streamRequest: Bool) throws {
        switch status {
        case 404, 410:
            throw FeedRestart.observerGone
        case 400:
            // A cursor the server cannot take (ahead of its log, after its
            // database was replaced): start over with a new observer.
            throw FeedRestart.observerGone
        case 200, 406, 415, 429:
            // Not a stream, or no stream for this client (its streams are
            // used up): long-polling still works.
            guard streamRequest else { fallthrough }
            throw FeedRestart.streamUnsupported
        default:
            let error = ObservableClientError.from(status: status, body: body)
            if let retryAfter { throw FeedRestart.retryAfter(retryAfter, error) }
            throw error
        }
    }

    // MARK: Applying

    /// Applies a feed answer, every transaction in it, in one go on the main
    /// actor: an observer of the objects never sees part of a transaction.
    func apply(_ answer: FeedAnswer) {
        var repairs: [(path: String, elements: [JSONValue])] = []
        var repaired = false
        for change in answer.changes {
            if let query = change.query {
                // A change of a query read's membership is its list's alone;
                // a field's set reaches the list (the element may move) and
                // the element, as any object's does.
                guard change.operation == .set else {
                    queryLists[change.path + "?" + query]?.apply(change, client: self)
                    continue
                }
                queryList(holding: change.path, query: query)?.apply(change, client: self)
            }
            guard let (target, field) = target(of: change.path) else { continue }
            if change.operation == .repair {
                repaired = true
                if target._$isCollection(field), case .array(let elements) = change.new {
                    if let index = repairs.firstIndex(where: { $0.path == change.path }) {
                        repairs[index].elements += elements
                    } else {
                        repairs.append((change.path, elements))
                    }
                    continue
                }
                readContext = ReadContext(applies: true, cursor: change.seq)
                target.apply(change, field: field)
                readContext = ReadContext(applies: false, cursor: 0)
                continue
            }
            // Already in what a read newer than the feed showed.
            if change.seq <= target.freshAt { continue }
            target.apply(change, field: field)
        }
        for repair in repairs {
            guard let (target, field) = target(of: repair.path) else { continue }
            readContext = ReadContext(applies: true, cursor: answer.cursor)
            target.replace(field, with: repair.elements, repaired: true)
            readContext = ReadContext(applies: false, cursor: 0)
        }
        cursor = max(cursor, answer.cursor)
        if !answer.changes.isEmpty {
            registrar.withMutation(of: self, keyPath: \.changesApplied) { _changesApplied += answer.changes.count }
        }
        // A repair does not cover rows (the grid's): read them again.
        if repaired {
            for path in loaded.singletons.sorted() {
                guard let object = objects[path], object.hasRows else { continue }
                _ = spawn { client in
                    if let answer = try? await client.read(path), let object = client.objects[path] {
                        client.take(answer, into: object, force: true)
                    }
                }
            }
        }
    }

    /// The object a change path concerns, and the field: a list's own path
    /// (`/jobs`, field ""), or an object's path and a field name.
    func target(of path: String) -> (any RemoteObject, String)? {
        if let object = objects[path] { return (object, "") }
        guard let slash = path.lastIndex(of: "/") else { return nil }
        guard let object = objects[String(path[..<slash])] else { return nil }
        return (object, String(path[path.index(after: slash)...]))
    }
}
