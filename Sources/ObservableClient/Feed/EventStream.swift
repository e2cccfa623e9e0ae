import AsyncHTTPClient
import Foundation
import JSON
import NIOCore
import Synchronization

/// The change feed as a Server-Sent Events stream, read as it arrives.
///
/// The answer's body is read on AsyncHTTPClient as chunks come in, on a
/// task of its own: while nothing arrives, nothing runs. Events are parsed
/// there, so the actor that applies them only applies. A watchdog ends the
/// stream when nothing at all (not even a heartbeat comment) arrived for
/// `silenceTimeout` seconds.
final class EventStream: Sendable {
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
    private let request: HTTPClientRequest
    private let silenceTimeout: Double
    private let state = Mutex(State())

    private struct State {
        var buffer: [UInt8] = []
        var eventName = ""
        var data: [UInt8] = []
        var hasData = false
        var lastActivity = ContinuousClock.now
        var reader: Task<Void, Never>?
        var ending: Ending?
        var done = false
    }

    init(request: HTTPClientRequest, silenceTimeout: Double) {
        (items, continuation) = AsyncThrowingStream.makeStream(of: Item.self, throwing: (any Error).self)
        self.request = request
        self.silenceTimeout = silenceTimeout
    }

    func start() {
        let reader = Task { [self] in await read() }
        let cancelled = state.withLock { state in
            state.reader = reader
            return state.done
        }
        if cancelled { reader.cancel() }
        let timeout = silenceTimeout
        Task { [weak self] in
            while let self, !Task.isCancelled {
                try? await Task.sleep(for: .seconds(timeout / 4))
                let (silent, done) = self.state.withLock { state in
                    (ContinuousClock.now - state.lastActivity > .seconds(timeout), state.done)
                }
                if done { return }
                if silent { self.cancel(.silent); return }
            }
        }
    }

    /// Ends the stream; `items` then finishes, with `ending` as its error when given.
    func cancel(_ ending: Ending? = nil) {
        let reader = state.withLock { state in
            if state.ending == nil { state.ending = ending }
            state.done = true
            return state.reader
        }
        reader?.cancel()
        if reader == nil { continuation.finish() }
    }

    /// Opens the stream and reads it to its end, or until it is cancelled.
    private func read() async {
        var failure: (any Error)?
        do {
            // The deadline is the head's: the body streams for as long as it lasts.
            let response = try await HTTPTransport.client.execute(request, deadline: .now() + .seconds(Int64(max(silenceTimeout, 30))))
            let status = Int(response.status.code)
            let contentType = (response.headers.first(name: "Content-Type") ?? "").lowercased()
            let retryAfter = response.headers.first(name: "Retry-After").flatMap(Double.init)
            state.withLock { $0.lastActivity = .now }
            continuation.yield(.opened(status: status, contentType: contentType, retryAfter: retryAfter))
            if status == 200, contentType.hasPrefix("text/event-stream") {
                for try await chunk in response.body {
                    var events: [Item] = []
                    state.withLock { state in
                        state.lastActivity = .now
                        state.buffer.append(contentsOf: chunk.readableBytesView)
                        Self.parse(&state, into: &events)
                    }
                    for event in events { continuation.yield(event) }
                }
            }
        } catch {
            failure = error
        }
        let ending = state.withLock { state in
            state.done = true
            return state.ending
        }
        if let ending {
            continuation.finish(throwing: ending)
        } else if let failure, !(HTTPTransport.mapped(failure) is CancellationError) {
            continuation.finish(throwing: HTTPTransport.mapped(failure))
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
