internal import CMicroHTTPD
import Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// Looks after the open event streams, on one thread: sends a heartbeat to
/// each that has been silent for `heartbeat`, waits for the sockets of
/// those whose client has not read what it was sent and lets each write
/// again when its socket can take more, and cuts one whose client takes
/// nothing for `stallTimeout`. Most streams never wait: a stream's events
/// are small, and a socket takes them at once.
final class StreamWriter: @unchecked Sendable {
    // Safe to share: `open`, `waiting` and `thread` are only touched under their locks.
    private let poller: Int32
    /// Every open stream, by id.
    private let open = Locked<[UInt64: EventStream]>([:])
    /// The streams waiting for their socket, by id.
    private let waiting = Locked<[UInt64: EventStream]>([:])
    private let thread = Locked<ServiceThread?>(nil)
    private let heartbeat: Duration
    private let stallTimeout: Duration

    init(heartbeat: Duration, stallTimeout: Duration) {
        poller = epoll_create1(Int32(EPOLL_CLOEXEC))
        self.heartbeat = heartbeat
        self.stallTimeout = stallTimeout
    }

    deinit {
        if poller >= 0 { Glibc.close(poller) }
    }

    /// Looks after `stream` until `remove`.
    func add(_ stream: EventStream) {
        open.withLock { $0[stream.id] = stream }
        startIfNeeded()
    }

    func remove(_ stream: EventStream) {
        _ = open.withLock { $0.removeValue(forKey: stream.id) }
    }

    /// The streams open now.
    var streams: [EventStream] { open.withLock { Array($0.values) } }

    var count: Int { open.withLock { $0.count } }

    /// Calls `stream.writable()` once its socket can take more (once: watch
    /// again to hear again).
    func watch(_ stream: EventStream) {
        let added = waiting.withLock { waiting -> Bool in
            defer { waiting[stream.id] = stream }
            return waiting[stream.id] == nil
        }
        var event = epoll_event()
        event.events = EPOLLOUT.rawValue | EPOLLONESHOT.rawValue
        event.data.u64 = stream.id
        if epoll_ctl(poller, added ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, stream.socket, &event) != 0, added {
            // Known to the poller from an earlier wait: armed again.
            epoll_ctl(poller, EPOLL_CTL_MOD, stream.socket, &event)
        }
    }

    /// Stops watching `stream` (before its connection goes back to
    /// libmicrohttpd, which may close the socket and reuse its number).
    func forget(_ stream: EventStream) {
        guard waiting.withLock({ $0.removeValue(forKey: stream.id) }) != nil else { return }
        epoll_ctl(poller, EPOLL_CTL_DEL, stream.socket, nil)
    }

    func stop() {
        thread.withLock { $0 }?.stop(timeout: .seconds(2))
    }

    private func startIfNeeded() {
        thread.withLock { thread in
            guard thread == nil else { return }
            thread = ServiceThread.start(name: "observable.streams") { [weak self] thread in
                var events = [epoll_event](repeating: epoll_event(), count: 64)
                var nextCheck = ServerClock.now
                while !thread.isStopping {
                    guard let self else { return }
                    let count = epoll_wait(self.poller, &events, Int32(events.count), 200)
                    for index in 0 ..< Int(max(0, count)) {
                        let id = events[index].data.u64
                        guard let stream = self.waiting.withLock({ $0[id] }) else { continue }
                        stream.writable()
                    }
                    let now = ServerClock.now
                    if now >= nextCheck {
                        nextCheck = now.advanced(by: .seconds(1))
                        self.keep(now: now)
                    }
                }
            }
        }
    }

    /// Once a second: a heartbeat to the silent streams (only they are taken
    /// out of the lock), and the stalled ones cut.
    private func keep(now: ServerClock.Instant) {
        let silent = now.advanced(by: .zero - heartbeat)
        for stream in open.withLock({ $0.values.filter { $0.lastWrite < silent } }) {
            stream.send(EventStream.heartbeat)
        }
        let stalled = now.advanced(by: .zero - stallTimeout)
        for stream in waiting.withLock({ Array($0.values) }) where stream.stalled(since: stalled) {
            stream.abort()
        }
    }
}
