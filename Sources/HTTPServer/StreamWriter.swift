internal import CMicroHTTPD
import Concurrency
#if canImport(Glibc)
import Glibc
#endif

/// Waits, on one thread, for the sockets of event streams whose client has
/// not read what it was sent, and lets each stream write again when its
/// socket can take more. Most streams never come here: a stream's events are
/// small, and a socket takes them at once. A stream whose client takes
/// nothing for `stallTimeout` is cut.
final class StreamWriter: @unchecked Sendable {
    // Safe to share: `waiting` and `thread` are only touched under their locks.
    private let poller: Int32
    private let waiting = Locked<[UInt64: EventStream]>([:])
    private let thread = Locked<ServiceThread?>(nil)
    private let stallTimeout: Duration

    init(stallTimeout: Duration) {
        poller = epoll_create1(Int32(EPOLL_CLOEXEC))
        self.stallTimeout = stallTimeout
    }

    deinit {
        if poller >= 0 { Glibc.close(poller) }
    }

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
        startIfNeeded()
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
                    if ServerClock.now >= nextCheck {
                        nextCheck = ServerClock.now.advanced(by: .seconds(1))
                        let stalled = ServerClock.now.advanced(by: .zero - self.stallTimeout)
                        for stream in self.waiting.withLock({ Array($0.values) }) where stream.stalled(since: stalled) {
                            stream.abort()
                        }
                    }
                }
            }
        }
    }
}
