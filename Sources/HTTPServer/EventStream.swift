internal import CMicroHTTPD
import Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// A response that stays open and is written to as things happen (a
/// Server-Sent Events stream), holding a socket and a little memory, never
/// a thread.
///
/// libmicrohttpd sends the status and headers and then asks for the body
/// with a content-reader callback. The first time it asks, the stream
/// suspends the connection and from then on writes its chunks to the socket
/// itself: libmicrohttpd leaves a suspended connection alone, and a write is
/// then one system call, without waking a worker or touching the
/// connection's memory pool. When the socket is full, the rest waits for
/// `StreamWriter` to find it writable (`isBlocked`; the writer is told by
/// `onDrained` when it may go on), and a client that takes nothing for the
/// idle timeout is cut. The stream hands the connection back (resumes it)
/// only to end: libmicrohttpd then writes the last chunk, or closes the
/// connection when the client left or was cut. `onEnd` is called once, when
/// libmicrohttpd is done with it.
public final class EventStream: @unchecked Sendable {
    // Safe to share: `state` is only touched under its lock.
    struct State {
        /// Framed chunks not yet on the socket, from `offset`.
        var out: [UInt8] = []
        var offset = 0
        var phase = Phase.opening
        /// Waiting for `StreamWriter` to find the socket writable.
        var blocked = false
        var closing = false
        /// The client left, or fell too far behind: the connection is closed.
        var failed = false
        var ended = false
        var lastWrite = ServerClock.now
        /// When the client last took bytes.
        var lastProgress = ServerClock.now
    }

    enum Phase {
        /// libmicrohttpd is sending the headers.
        case opening
        /// Suspended: the stream writes to the socket.
        case writing
        /// Resumed to end: libmicrohttpd finishes the response.
        case handedBack
    }

    /// The socket's send buffer: room for many events.
    static let socketBuffer: Int32 = 64 * 1024

    private let state = Locked(State())
    let connection: ConnectionPointer
    let id: UInt64
    let socket: Int32
    private let onEnd: @Sendable () -> Void
    /// Called when a blocked stream has written all it had.
    private let onDrained: @Sendable () -> Void
    weak var daemon: HTTPDaemon?

    init(connection: ConnectionPointer, id: UInt64, daemon: HTTPDaemon, onDrained: @escaping @Sendable () -> Void,
         onEnd: @escaping @Sendable () -> Void)
    {
        self.connection = connection
        self.id = id
        self.socket = osv_connection_fd(connection.raw)
        self.daemon = daemon
        self.onDrained = onDrained
        self.onEnd = onEnd
    }

    /// Writes `bytes` as one chunk (or queues it while the socket is full:
    /// a writer that cares waits for `onDrained` when `isBlocked`); false
    /// once the stream ended or is closing.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return isOpen }
        let (accepted, handBack) = state.withLock { state -> (Bool, Bool) in
            guard !state.closing, !state.failed, !state.ended else { return (false, false) }
            Self.frame(bytes, into: &state.out)
            state.lastWrite = ServerClock.now
            guard state.phase == .writing, !state.blocked else { return (true, false) }
            return (true, finish(&state))
        }
        if handBack { MHD_resume_connection(connection.raw) }
        return accepted
    }

    /// Ends the stream once what was sent is written.
    public func close() {
        let handBack = state.withLock { state -> Bool in
            guard !state.closing, !state.ended else { return false }
            state.closing = true
            guard state.phase == .writing, !state.blocked else { return false }
            state.phase = .handedBack
            return true
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
    public var lastWrite: ServerClock.Instant { state.withLock { $0.lastWrite } }

    public var isOpen: Bool { state.withLock { !$0.closing && !$0.failed && !$0.ended } }

    /// Whether bytes wait to be written: the socket is full, or the headers
    /// are not out yet (`onDrained` is called when that is over).
    public var isBlocked: Bool { state.withLock { $0.blocked || $0.phase == .opening } }

    /// Whether the client has taken nothing since `instant` while bytes wait.
    func stalled(since instant: ServerClock.Instant) -> Bool {
        state.withLock { $0.blocked && $0.lastProgress < instant }
    }

    /// libmicrohttpd asks for the body: the headers are out, and from here
    /// on the stream writes the socket itself.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        var opened = false
        defer { if opened { onDrained() } }
        return state.withLock { state -> Int in
            if state.phase == .opening {
                state.phase = .writing
                opened = true
                // A fixed socket buffer (not grown by the kernel up to
                // megabytes for a client that does not read).
                var size = Self.socketBuffer
                setsockopt(socket, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
                if flush(&state) { state.phase = .handedBack }
            }
            if state.phase == .handedBack {
                opened = false
                // END_WITH_ERROR closes the connection; END_OF_STREAM sends the last chunk.
                return state.failed ? -2 : -1
            }
            // Nothing for libmicrohttpd to write: suspended until the end
            // (under this lock, so no write can come before the suspension).
            MHD_suspend_connection(connection.raw)
            // The writer may go on now (after this lock) unless the socket is full.
            if state.blocked { opened = false }
            return 0
        }
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
    /// lock, in the `.writing` phase, not blocked.
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
            // The client left, or does not read.
            state.failed = true
            break
        }
        state.out.removeAll(keepingCapacity: state.out.capacity <= 256)
        state.offset = 0
        return state.failed || state.closing
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

    /// One HTTP/1.1 chunk: size in hex, the bytes, a line end.
    static func frame(_ bytes: [UInt8], into out: inout [UInt8]) {
        out.append(contentsOf: String(bytes.count, radix: 16).utf8)
        out.append(13)
        out.append(10)
        out.append(contentsOf: bytes)
        out.append(13)
        out.append(10)
    }
}

extension Connection {
    /// Answers this request with `status` and `headers` at once and keeps
    /// the connection open as an `EventStream`, first sending `initial`.
    /// Returns nil when the server is stopping (answer normally then). After
    /// opening, the responder must return `.parked`.
    public func openStream(status: Int = 200, headers: [(name: String, value: String)], initial: [UInt8],
                           onDrained: @escaping @Sendable () -> Void, onEnd: @escaping @Sendable () -> Void) -> EventStream?
    {
        daemon.openStream(pointer, context: context, status: status, headers: headers, initial: initial, onDrained: onDrained, onEnd: onEnd)
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
