import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JSON
import Synchronization

/// The change feed as a Server-Sent Events stream, read as it arrives.
///
/// FoundationNetworking has no `URLSession.bytes(for:)`; a data delegate
/// receives a chunked answer chunk by chunk instead. Events are parsed here,
/// on the session's delegate queue, so the actor that applies them only
/// applies. A watchdog ends the stream when nothing at all (not even a
/// heartbeat comment) arrived for `silenceTimeout` seconds.
final class EventStream: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: NSObject subclasses cannot be checked. Safe because every
    // mutable state is in `state` (a Mutex), and the delegate methods run
    // one at a time on `queue` (maxConcurrentOperationCount 1).

    enum Item: Sendable {
        /// The answer's head: its status, content type and `Retry-After`.
        case opened(status: Int, contentType: String, retryAfter: Double?)
        /// An `event: changes` (one transaction).
        case changes(FeedAnswer)
        /// `event: gone`: the resume point is past retention (only without `repair=true`).
        case gone
    }

    /// Why a stream ended without the server ending it.
    enum Ending: Error {
        case silent
    }

    let items: AsyncThrowingStream<Item, any Error>
    private let continuation: AsyncThrowingStream<Item, any Error>.Continuation
    private let request: URLRequest
    private let silenceTimeout: Double
    private let queue: OperationQueue
    private let state = Mutex(State())

    private struct State {
        var buffer: [UInt8] = []
        var eventName = ""
        var data: [UInt8] = []
        var hasData = false
        var lastActivity = ContinuousClock.now
        var session: URLSession?
        var ending: Ending?
        var status = 0
    }

    init(request: URLRequest, silenceTimeout: Double) {
        (items, continuation) = AsyncThrowingStream.makeStream(of: Item.self, throwing: (any Error).self)
        self.request = request
        self.silenceTimeout = silenceTimeout
        queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        super.init()
    }

    func start() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // The watchdog decides when a stream is silent, not the session.
        configuration.timeoutIntervalForRequest = max(silenceTimeout * 4, 600)
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        state.withLock { $0.session = session }
        session.dataTask(with: request).resume()
        let timeout = silenceTimeout
        Task { [weak self] in
            while let self, !Task.isCancelled {
                try? await Task.sleep(for: .seconds(timeout / 4))
                let (silent, done) = self.state.withLock { state in
                    (ContinuousClock.now - state.lastActivity > .seconds(timeout), state.session == nil)
                }
                if done { return }
                if silent { self.cancel(.silent); return }
            }
        }
    }

    /// Ends the stream; `items` then finishes, with `ending` as its error when given.
    func cancel(_ ending: Ending? = nil) {
        let session = state.withLock { state in
            if state.ending == nil { state.ending = ending }
            return state.session
        }
        session?.invalidateAndCancel()
        if session == nil { continuation.finish() }
    }

    // MARK: URLSessionDataDelegate

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void)
    {
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        let contentType = (http?.value(forHTTPHeaderField: "Content-Type") ?? "").lowercased()
        let retryAfter = http?.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
        state.withLock {
            $0.status = status
            $0.lastActivity = .now
        }
        continuation.yield(.opened(status: status, contentType: contentType, retryAfter: retryAfter))
        completionHandler(status == 200 && contentType.hasPrefix("text/event-stream") ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        var events: [Item] = []
        state.withLock { state in
            state.lastActivity = .now
            state.buffer.append(contentsOf: data)
            Self.parse(&state, into: &events)
        }
        for event in events { continuation.yield(event) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let ending = state.withLock { state in
            state.session = nil
            return state.ending
        }
        session.finishTasksAndInvalidate()
        if let ending {
            continuation.finish(throwing: ending)
        } else if let error, (error as? URLError)?.code != .cancelled {
            continuation.finish(throwing: ObservableClientError.unreachable(error.localizedDescription))
        } else {
            continuation.finish()
        }
    }

    // MARK: Parsing (text/event-stream, WHATWG HTML §9.2.6)

    private static func parse(_ state: inout State, into events: inout [Item]) {
        var start = 0
        let bytes = state.buffer
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == 0x0A || byte == 0x0D else { index += 1; continue }
            let line = bytes[start..<index]
            // CRLF is one line end.
            if byte == 0x0D {
                if index + 1 == bytes.count { break }  // wait: the LF may follow
                if bytes[index + 1] == 0x0A { index += 1 }
            }
            index += 1
            start = index
            handle(line: line, &state, into: &events)
        }
        state.buffer.removeFirst(start)
    }

    private static func handle(line: ArraySlice<UInt8>, _ state: inout State, into events: inout [Item]) {
        if line.isEmpty {
            defer {
                state.eventName = ""
                state.data = []
                state.hasData = false
            }
            guard state.hasData else { return }
            switch state.eventName {
            case "", "changes":
                if let answer = FeedAnswer(bytes: state.data) { events.append(.changes(answer)) }
            case "gone":
                events.append(.gone)
            default:
                break
            }
            return
        }
        if line.first == UInt8(ascii: ":") { return }  // a comment: a heartbeat
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let field = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
        var value = colon < line.endIndex ? line[(colon + 1)...] : []
        if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        switch field {
        case "event": state.eventName = String(decoding: value, as: UTF8.self)
        case "data":
            if state.hasData { state.data.append(0x0A) }
            state.data.append(contentsOf: value)
            state.hasData = true
        default: break  // id: (the answer's cursor says the same), retry:
        }
    }
}
