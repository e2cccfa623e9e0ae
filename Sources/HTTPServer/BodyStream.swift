internal import CMicroHTTPD
import Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// A response body made a piece at a time while it is sent, so that a large
/// answer is never whole in memory and its making never holds a worker.
///
/// Its producer runs on a thread of its own, started when libmicrohttpd
/// first asks for bytes (never for a `HEAD`), and hands over pieces with
/// `write`, which waits while `capacity` bytes are unsent: the client's
/// pace sets the producer's. libmicrohttpd takes the pieces on its worker
/// (a content reader callback); when none is ready, the callback suspends
/// the connection, as `microhttpd.h` prescribes, and the next `write` or
/// the end resumes it. The body is exactly `length` bytes: the head said so.
///
/// It ends when libmicrohttpd lets the response go (sent, the client left,
/// or cut for not reading within the idle timeout): a `write` then answers
/// false and the producer stops. `stop` cancels every body still open
/// before the daemon stops, so that no connection stays suspended.
public final class BodyStream: @unchecked Sendable {
    // Safe to share: every `var` is only touched under `lock`.
    public let length: Int
    private let lock = ConditionLock()
    private var pieces: [[UInt8]] = []
    /// Bytes of `pieces[0]` already taken.
    private var taken = 0
    private var buffered = 0
    private var producing = false
    private var finished = false
    private var cancelled = false
    private var producerWaits = false
    /// Bytes handed to libmicrohttpd.
    private var sent = 0
    /// The connection, while the callback has suspended it for want of bytes.
    private var waiting: OpaquePointer?
    private var connection: OpaquePointer?
    private weak var daemon: HTTPDaemon?
    private let produce: @Sendable (BodyStream) -> Void
    private let onEnd: @Sendable () -> Void

    /// Unsent bytes a producer may run ahead of its client by.
    public static let capacity = 256 * 1024

    /// The socket's send buffer while the body is sent.
    static let socketBuffer: Int32 = 256 * 1024

    /// A body of `length` bytes that `produce` writes (on its own thread),
    /// then returns; `onEnd` is called once: when its last byte is handed
    /// to libmicrohttpd, or when it is let go short of that (abandoned, or
    /// never sent at all).
    public init(length: Int, produce: @escaping @Sendable (BodyStream) -> Void, onEnd: @escaping @Sendable () -> Void = {}) {
        self.length = length
        self.produce = produce
        self.onEnd = onEnd
    }

    deinit {
        end()
    }

    private let endOnce = Locked(false)

    /// Calls `onEnd`, the first time only: once the last byte is handed to
    /// libmicrohttpd, or when the body is let go before that.
    private func end() {
        guard endOnce.withLock({ ended in defer { ended = true }; return !ended }) else { return }
        onEnd()
    }

    /// Hands `bytes` over, waiting while `capacity` bytes are unsent;
    /// false when the body is no longer wanted (stop writing).
    public func write(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return isWanted }
        var resume: OpaquePointer?
        let accepted = lock.withLock { () -> Bool in
            while !cancelled && buffered >= Self.capacity {
                producerWaits = true
                lock.wait()
            }
            producerWaits = false
            guard !cancelled else { return false }
            pieces.append(bytes)
            buffered += bytes.count
            swap(&resume, &waiting)
            return true
        }
        if let resume { MHD_resume_connection(resume) }
        return accepted
    }

    /// Whether the body is still wanted.
    public var isWanted: Bool { lock.withLock { !cancelled } }

    /// Whether the producer waits for its client to take what it made.
    public var isWaitingForClient: Bool { lock.withLock { producerWaits } }

    /// The producer is done (all written, or it gave up).
    private func producerFinished() {
        var resume: OpaquePointer?
        lock.withLock {
            finished = true
            swap(&resume, &waiting)
        }
        if let resume { MHD_resume_connection(resume) }
    }

    /// Lets the body go: the producer's next `write` answers false, and a
    /// connection waiting for bytes is resumed (to be closed).
    func cancel() {
        var resume: OpaquePointer?
        lock.withLock {
            cancelled = true
            swap(&resume, &waiting)
            lock.broadcast()
        }
        if let resume { MHD_resume_connection(resume) }
    }

    /// Up to `max` bytes into `buffer`, on a libmicrohttpd worker: how many,
    /// 0 with the connection suspended until bytes come, or -2 (the
    /// connection is closed) when the body cannot be completed.
    fileprivate func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        var start = false
        let count = lock.withLock { () -> Int in
            if cancelled { return -2 }
            if buffered == 0 {
                // Ended short of `length`: the head promised more.
                if finished { return -2 }
                if !producing {
                    producing = true
                    start = true
                }
                guard let connection else { return -2 }
                waiting = connection
                MHD_suspend_connection(connection)
                return 0
            }
            var count = 0
            let target = UnsafeMutableRawPointer(buffer)
            while count < max, !pieces.isEmpty {
                let piece = pieces[0]
                let n = min(max - count, piece.count - taken)
                piece.withUnsafeBytes { bytes in
                    (target + count).copyMemory(from: bytes.baseAddress! + taken, byteCount: n)
                }
                count += n
                taken += n
                if taken == piece.count {
                    pieces.removeFirst()
                    taken = 0
                }
            }
            buffered -= count
            sent += count
            lock.signal()
            return count
        }
        if count > 0, lock.withLock({ sent == length }) { end() }
        if start {
            ServiceThread.start(name: "observable.answer") { [self] _ in
                produce(self)
                producerFinished()
            }
        }
        return count
    }

    /// libmicrohttpd's response for this body on `connection` (retaining
    /// the body until libmicrohttpd frees the response).
    func makeResponse(on connection: OpaquePointer, daemon: HTTPDaemon) -> OpaquePointer? {
        lock.withLock {
            self.connection = connection
            self.daemon = daemon
            // Made after `stop` cancelled the bodies: cut at once, never
            // suspended (the daemon is about to stop).
            if daemon.isStopping { cancelled = true }
        }
        daemon.bodyOpened(self)
        // A fixed socket buffer, as an event stream's: the kernel holds at
        // most this much of the body, beyond `capacity`, for a slow client.
        var size = Self.socketBuffer
        setsockopt(osv_connection_fd(connection), SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let retained = Unmanaged.passRetained(self).toOpaque()
        guard let response = MHD_create_response_from_callback(UInt64(length), 64 * 1024, bodyStreamRead, retained, bodyStreamFree) else {
            daemon.bodyClosed(self)
            Unmanaged<BodyStream>.fromOpaque(retained).release()
            return nil
        }
        return response
    }

    fileprivate func released() {
        cancel()
        let daemon = lock.withLock { () -> HTTPDaemon? in
            connection = nil
            return self.daemon
        }
        daemon?.bodyClosed(self)
    }
}

private func bodyStreamRead(_ cls: UnsafeMutableRawPointer?, _ position: UInt64, _ buffer: UnsafeMutablePointer<CChar>?, _ max: Int) -> Int {
    guard let cls, let buffer else { return -2 }
    return Unmanaged<BodyStream>.fromOpaque(cls).takeUnretainedValue().read(into: buffer, max: max)
}

private func bodyStreamFree(_ cls: UnsafeMutableRawPointer?) {
    guard let cls else { return }
    let body = Unmanaged<BodyStream>.fromOpaque(cls).takeRetainedValue()
    body.released()
}
