internal import CMicroHTTPD
import Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// A response that stays open and is written to as things happen (a
/// Server-Sent Events stream), holding a socket and a little memory, never
/// a thread.
///
/// libmicrohttpd asks for its bytes with a content-reader callback: when
/// nothing is waiting, the callback suspends the connection and returns
/// nothing, and `send` resumes it. A stream ends with `close` (after what
/// was sent), when the client leaves (found at the next write), or when the
/// server stops; `onEnd` is then called once.
public final class EventStream: @unchecked Sendable {
    // Safe to share: `state` is only touched under its lock.
    struct State {
        var pending: [UInt8] = []
        /// Bytes of `pending` already handed to libmicrohttpd.
        var offset = 0
        var suspended = false
        var closing = false
        var ended = false
        var lastWrite = ServerClock.now
    }

    private let state = Locked(State())
    let connection: ConnectionPointer
    let id: UInt64
    private let onEnd: @Sendable () -> Void
    weak var daemon: HTTPDaemon?

    init(connection: ConnectionPointer, id: UInt64, daemon: HTTPDaemon, onEnd: @escaping @Sendable () -> Void) {
        self.connection = connection
        self.id = id
        self.daemon = daemon
        self.onEnd = onEnd
    }

    /// Queues `bytes` and wakes the connection; false once the stream ended
    /// or is closing.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        let resume = state.withLock { state -> Bool? in
            guard !state.closing, !state.ended else { return nil }
            state.pending.append(contentsOf: bytes)
            state.lastWrite = ServerClock.now
            guard state.suspended else { return false }
            state.suspended = false
            return true
        }
        guard let resume else { return false }
        if resume { MHD_resume_connection(connection.raw) }
        return true
    }

    /// Ends the stream once what was sent is written.
    public func close() {
        let resume = state.withLock { state -> Bool in
            guard !state.closing, !state.ended else { return false }
            state.closing = true
            guard state.suspended else { return false }
            state.suspended = false
            return true
        }
        if resume { MHD_resume_connection(connection.raw) }
    }

    /// When the stream last had something to send.
    public var lastWrite: ServerClock.Instant { state.withLock { $0.lastWrite } }

    public var isOpen: Bool { state.withLock { !$0.closing && !$0.ended } }

    /// libmicrohttpd asks for up to `max` bytes.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        state.withLock { state -> Int in
            let available = state.pending.count - state.offset
            if available > 0 {
                let count = min(available, max)
                state.pending.withUnsafeBytes { bytes in
                    memcpy(buffer, bytes.baseAddress! + state.offset, count)
                }
                state.offset += count
                if state.offset == state.pending.count {
                    state.pending.removeAll(keepingCapacity: state.pending.capacity <= 4096)
                    state.offset = 0
                }
                return count
            }
            if state.closing { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
            // Nothing to say: suspended until `send` (under this lock, so no
            // send can fall between the check and the suspension).
            state.suspended = true
            MHD_suspend_connection(connection.raw)
            return 0
        }
    }

    /// libmicrohttpd is done with the response (the stream ended, or the
    /// client left).
    func ended() {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        daemon?.streamEnded(self)
        onEnd()
    }
}

extension Connection {
    /// Answers this request with `status` and `headers` at once and keeps
    /// the connection open as an `EventStream`, first sending `initial`.
    /// Returns nil when the server is stopping (answer normally then). After
    /// opening, the responder must return `.parked`.
    public func openStream(status: Int = 200, headers: [(name: String, value: String)], initial: [UInt8],
                           onEnd: @escaping @Sendable () -> Void) -> EventStream?
    {
        daemon.openStream(pointer, context: context, status: status, headers: headers, initial: initial, onEnd: onEnd)
    }
}

func streamReader(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
    guard let cls, let buffer else { return -2 }
    return Unmanaged<EventStream>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

func streamFreed(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    let stream = Unmanaged<EventStream>.fromOpaque(cls).takeRetainedValue()
    stream.ended()
}
