internal import CMicroHTTPD
import Concurrency

/// A connection suspended by a long-poll, waiting for its answer.
///
/// It is answered exactly once: by whoever calls `answer(with:)` first, or by
/// the server when its deadline passes or the server stops.
public final class ParkedConnection: Sendable {
    enum State {
        case parked
        case answered(HTTPResponse)
        case delivered
    }

    let id: UInt64
    let deadline: ServerClock.Instant
    /// Builds the answer when the deadline passes or the server stops; nil
    /// when another thread has taken the answering on itself (and will
    /// resume it through `HTTPDaemon.resume`).
    let onDeadline: @Sendable () -> HTTPResponse?
    let connection: ConnectionPointer
    private let state = Locked<State>(.parked)

    init(id: UInt64, connection: ConnectionPointer, deadline: ServerClock.Instant, onDeadline: @escaping @Sendable () -> HTTPResponse?) {
        self.id = id
        self.connection = connection
        self.deadline = deadline
        self.onDeadline = onDeadline
    }

    /// Stores `response` if nobody answered yet; returns whether it did. The
    /// caller then resumes the connection (see `HTTPDaemon.resume`).
    func settle(with response: HTTPResponse) -> Bool {
        state.withLock { state in
            guard case .parked = state else { return false }
            state = .answered(response)
            return true
        }
    }

    /// The stored answer, handed out once, when libmicrohttpd calls back.
    func takeAnswer() -> HTTPResponse? {
        state.withLock { state in
            guard case .answered(let response) = state else { return nil }
            state = .delivered
            return response
        }
    }

    public var isParked: Bool {
        state.withLock { if case .parked = $0 { return true } else { return false } }
    }
}

/// An MHD connection pointer. libmicrohttpd lets any thread resume a
/// suspended connection, and the pointer stays valid until the request
/// completes, which cannot happen while the connection is suspended.
struct ConnectionPointer: @unchecked Sendable {
    let raw: OpaquePointer
}
