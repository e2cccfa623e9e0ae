internal import CMicroHTTPD
import Concurrency
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A response that stays open and is written to as things happen (a
/// Server-Sent Events stream), holding a socket and a little memory, never
/// a thread.
///
/// Once the responder that opened it is done, the stream's connection is
/// suspended, as a parked long-poll's is, and the
/// stream writes the response to its socket itself: the head, then one chunk
/// per `send`. libmicrohttpd leaves a suspended connection alone, so a write
/// is one system call that wakes no worker, and the connection's memory pool
/// is never touched for a response (libmicrohttpd clears the unused part of
/// its read buffer when it begins one: 8 KiB a connection). When the socket
/// is full, the rest waits for `StreamWriter` to find it writable
/// (`isBlocked`; `onDrained` says when the writer may go on), and a client
/// that takes nothing for the idle timeout is cut. To end, the stream writes
/// the last chunk and hands the connection back (resumes it): the access
/// handler then has libmicrohttpd close it (the head said `Connection:
/// close`). `onEnd` is called once, when libmicrohttpd is done with it.
public final class EventStream: @unchecked Sendable {
    // Safe to share: `state` is only touched under its lock.
    struct State {
        /// Bytes not yet on the socket, from `offset`.
        var out: [UInt8] = []
        var offset = 0
        var phase = Phase.opening
        /// Waiting for `StreamWriter` to find the socket writable.
        var blocked = false
        var closing = false
        /// The client left, or was cut: the connection is closed, not ended.
        var failed = false
        var ended = false
        /// When the client last took bytes.
        var lastProgress = ServerClock.now
    }

    enum Phase {
        /// Inside the access handler, before the suspension.
        case opening
        /// Suspended: the stream writes to the socket.
        case writing
        /// Resumed for libmicrohttpd to close (or never suspended).
        case handedBack
    }

    /// A comment line, sent after a silence: it keeps proxies from closing
    /// the stream.
    static let heartbeat = Array(":\n\n".utf8)

    /// The socket's send buffer: room for many events.
    static let socketBuffer: Int32 = 64 * 1024

    private let state = Locked(State())
    /// When the stream last had something to send (monotonic nanoseconds),
    /// read without the lock by the heartbeat.
    private let lastWriteNanoseconds = Atomic<UInt64>(ServerClock.now.nanoseconds)
    let connection: ConnectionPointer
    let id: UInt64
    let socket: Int32
    /// HTTP/1.1 chunks (an HTTP/1.0 client gets the bytes as they are, up to
    /// the close).
    let chunked: Bool
    private let onEnd: @Sendable () -> Void
    /// Called when a blocked stream has written all it had.
    private let onDrained: @Sendable () -> Void
    weak var daemon: HTTPDaemon?

    init(connection: ConnectionPointer, id: UInt64, daemon: HTTPDaemon, chunked: Bool, onDrained: @escaping @Sendable () -> Void,
         onEnd: @escaping @Sendable () -> Void)
    {
        self.connection = connection
        self.id = id
        self.socket = osv_connection_fd(connection.raw)
        self.chunked = chunked
        self.daemon = daemon
        self.onDrained = onDrained
        self.onEnd = onEnd
    }

    /// Queues the response's head and first bytes: nothing is written
    /// until `open`, so that whoever opened the stream has it in hand first.
    func prepare(head: [UInt8], initial: [UInt8]) {
        state.withLock { state in
            state.out.insert(contentsOf: head, at: 0)
            frame(initial, into: &state.out)
        }
    }

    /// Writes what is queued, from the access handler once the responder
    /// is done, then suspends the connection. False when the client is
    /// already gone or the stream ended before it opened (not suspended: the
    /// handler closes the connection).
    func open() -> Bool {
        // A fixed socket buffer, not grown by the kernel up to megabytes for
        // a client that does not read.
        var size = Self.socketBuffer
        setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let drained = state.withLock { state -> Bool? in
            guard state.phase == .opening else { return false }
            state.phase = .writing
            if flush(&state) {
                state.phase = .handedBack
                return nil
            }
            // Under this lock: no hand-back can come before the suspension.
            MHD_suspend_connection(connection.raw)
            return !state.blocked
        }
        guard let drained else { return false }
        // The writer goes on (unless the socket is full already). Whatever
        // happens to the stream from here, it resumes the connection, and
        // the handler is asked again.
        if drained { onDrained() }
        return true
    }

    /// Whether the stream was handed back, to be closed (the access
    /// handler's question when its connection resumes).
    var isHandedBack: Bool { state.withLock { $0.phase == .handedBack } }

    /// Writes `bytes` as one chunk (or queues it while the socket is full:
    /// a writer that cares waits for `onDrained` when `isBlocked`); false
    /// once the stream ended or is closing.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return isOpen }
        let (accepted, handBack) = state.withLock { state -> (Bool, Bool) in
            guard !state.closing, !state.failed, !state.ended else { return (false, false) }
            frame(bytes, into: &state.out)
            lastWriteNanoseconds.store(ServerClock.now.nanoseconds, ordering: .relaxed)
            guard state.phase == .writing, !state.blocked else { return (true, false) }
            return (true, finish(&state))
        }
        if handBack { MHD_resume_connection(connection.raw) }
        return accepted
    }

    /// Ends the stream once what was sent is written.
    public func close() {
        let handBack = state.withLock { state -> Bool in
            guard !state.closing, !state.failed, !state.ended else { return false }
            state.closing = true
            // The last chunk.
            if chunked { state.out.append(contentsOf: [48, 13, 10, 13, 10]) }
            guard state.phase == .writing, !state.blocked else { return false }
            return finish(&state)
        }
        if handBack { MHD_resume_connection(connection.raw) }
    }

    /// Cuts the stream now, written or not (its client does not read).
    func abort() {
        let handBack = state.withLock { state -> Bool in
            guard !state.ended, state.phase == .writing else { return false }
            state.failed = true
            if state.blocked {
                state.blocked = false
                daemon?.streamWriter.forget(self)
            }
            state.phase = .handedBack
            return true
        }
        if handBack { MHD_resume_connection(connection.raw) }
    }

    /// When the stream last had something to send.
    public var lastWrite: ServerClock.Instant { ServerClock.Instant(nanoseconds: lastWriteNanoseconds.load(ordering: .relaxed)) }

    public var isOpen: Bool { state.withLock { !$0.closing && !$0.failed && !$0.ended } }

    /// Whether bytes wait to be written: the socket is full, or the stream
    /// is not open yet (`onDrained` is called when that is over).
    public var isBlocked: Bool { state.withLock { $0.blocked || $0.phase == .opening } }

    /// Whether the client has taken nothing since `instant` while bytes wait.
    func stalled(since instant: ServerClock.Instant) -> Bool {
        state.withLock { $0.blocked && $0.lastProgress < instant }
    }

    /// `StreamWriter` found the socket writable again.
    func writable() {
        let (handBack, drained) = state.withLock { state -> (Bool, Bool) in
            guard state.blocked else { return (false, false) }
            state.blocked = false
            let done = finish(&state)
            // Watched again when the socket is still full.
            if !state.blocked { daemon?.streamWriter.forget(self) }
            return (done, !done && !state.blocked)
        }
        if handBack { MHD_resume_connection(connection.raw) }
        if drained { onDrained() }
    }

    /// Writes what is queued (`flush`) and, when the stream is done with
    /// the socket, hands the connection back: true when the caller must then
    /// resume it (after the lock).
    private func finish(_ state: inout State) -> Bool {
        guard flush(&state) else { return false }
        state.phase = .handedBack
        return true
    }

    /// Writes what is queued; true when the stream is done with the socket
    /// (all written and closing, or the client is gone). Called under the
    /// lock, not blocked.
    private func flush(_ state: inout State) -> Bool {
        while state.offset < state.out.count {
            let written = state.out.withUnsafeBytes { bytes in
                Glibc.send(socket, bytes.baseAddress! + state.offset, bytes.count - state.offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written > 0 {
                state.offset += written
                state.lastProgress = ServerClock.now
                continue
            }
            if written < 0, errno == EINTR { continue }
            if written < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                state.blocked = true
                daemon?.streamWriter.watch(self)
                return false
            }
            // The client left.
            state.failed = true
            break
        }
        state.out = []
        state.offset = 0
        return state.failed || state.closing
    }

    /// libmicrohttpd is done with the connection (closed by the handler, or
    /// the client left).
    func ended() {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        daemon?.streamEnded(self)
        onEnd()
    }

    /// One HTTP/1.1 chunk (size in hex, the bytes, a line end), or the
    /// bytes as they are.
    private func frame(_ bytes: [UInt8], into out: inout [UInt8]) {
        guard chunked else { return out.append(contentsOf: bytes) }
        out.append(contentsOf: String(bytes.count, radix: 16).utf8)
        out.append(13)
        out.append(10)
        out.append(contentsOf: bytes)
        out.append(13)
        out.append(10)
    }

    /// The status line and headers of a stream's response.
    static func head(status: Int, headers: [(name: String, value: String)], chunked: Bool) -> [UInt8] {
        var text = HTTPResponse.headLines(status: status, headers: headers)
        if chunked { text += "Transfer-Encoding: chunked\r\n" }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }
}

extension Connection {
    /// Answers this request with `head`'s status and headers at once (its
    /// body is not sent) and keeps the connection open as an `EventStream`,
    /// first sending `initial`. `head` is asked for only when the stream
    /// opens: it returns nil, `head` unasked, when the server is stopping
    /// (answer normally then). After opening, the responder must return
    /// `.parked`.
    public func openStream(head: () -> HTTPResponse, initial: [UInt8],
                           onDrained: @escaping @Sendable () -> Void, onEnd: @escaping @Sendable () -> Void) -> EventStream?
    {
        daemon.openStream(pointer, context: context, head: head, initial: initial, onDrained: onDrained, onEnd: onEnd)
    }
}
