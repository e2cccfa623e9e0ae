import Concurrency
import HTTPServer
import ModelStore

/// What a list route tells `read` about how large its answer can be.
struct LargeRead: Sendable {
    typealias Render = @Sendable (ModelState, FieldSelection, RepresentationOutput?) throws -> Representation
    /// How many elements the answer shows in `state` (an upper bound).
    let elements: @Sendable (ModelState) -> Int
}

/// How a read's answer is rendered: whole, or (a read that may be large)
/// into the output it is given.
enum ReadRendering: Sendable {
    case whole(@Sendable (ModelState, FieldSelection) throws -> Representation)
    case large(LargeRead, LargeRead.Render)

    var large: LargeRead? {
        if case .large(let large, _) = self { return large }
        return nil
    }

    func render(_ state: ModelState, _ selection: FieldSelection, into output: RepresentationOutput?) throws -> Representation {
        switch self {
        case .whole(let render): return try render(state, selection)
        case .large(_, let render): return try render(state, selection, output)
        }
    }
}

/// A read on its way to another thread: what its route asked.
struct PendingRead: Sendable {
    let context: RouteContext
    let fields: [String]
    let rendering: ReadRendering
}

/// The large reads in progress, each on a thread of its own: a worker
/// never renders one, so `/healthz` and the other clients' reads are
/// answered while it is made and sent. Bounded in all and per client
/// (`--max-large-reads`, `--max-large-reads-per-client`): past either, a
/// read waits its turn.
final class LargeReads: Sendable {
    /// Elements past which a list is rendered apart from the workers.
    let apartAbove: Int
    /// Bytes up to which an answer is kept whole (and may be reused, as
    /// any answer); past them it is written again as it is sent.
    let keptWholeUpTo: Int
    let maxInAll: Int
    let maxPerClient: Int

    private struct Places {
        var all = 0
        var byClient: [String: Int] = [:]
        /// Reads waiting for a place, in the order they came.
        var waiting: [(client: String?, start: @Sendable (Ticket) -> Void)] = []

        func fits(_ client: String?, maxInAll: Int, maxPerClient: Int) -> Bool {
            all < maxInAll && (client.map { byClient[$0, default: 0] < maxPerClient } ?? true)
        }

        mutating func take(_ client: String?) {
            all += 1
            if let client { byClient[client, default: 0] += 1 }
        }
    }

    private let places = Locked(Places())
    private let admittedCount = Locked(0)

    init(apartAbove: Int = 200, keptWholeUpTo: Int = 1 << 20, maxInAll: Int = 32, maxPerClient: Int = 4) {
        self.apartAbove = apartAbove
        self.keptWholeUpTo = keptWholeUpTo
        self.maxInAll = maxInAll
        self.maxPerClient = maxPerClient
    }

    /// Reads apart in progress.
    var count: Int { places.withLock { $0.all } }

    /// Reads waiting for a place.
    var waiting: Int { places.withLock { $0.waiting.count } }

    /// Reads admitted since the start.
    var admitted: Int { admittedCount.withLock { $0 } }

    /// Runs `start` with a place for one more large read of `client` (nil:
    /// trusted, counted in all only): now, or once a place is given back.
    /// A client has at most `maxPerClient` in progress and the server
    /// `maxInAll`; the others wait, in the order they came, their
    /// connections suspended (a client's many reads wait for its own,
    /// never hold another's).
    func admit(client: String?, _ start: @escaping @Sendable (Ticket) -> Void) {
        let now = places.withLock { places -> Bool in
            guard places.fits(client, maxInAll: maxInAll, maxPerClient: maxPerClient) else {
                places.waiting.append((client, start))
                return false
            }
            places.take(client)
            return true
        }
        if now { begin(client: client, start) }
    }

    private func begin(client: String?, _ start: @Sendable (Ticket) -> Void) {
        admittedCount.withLock { $0 += 1 }
        start(Ticket(reads: self, client: client))
    }

    fileprivate func release(client: String?) {
        let next = places.withLock { places -> [(client: String?, start: @Sendable (Ticket) -> Void)] in
            places.all -= 1
            if let client {
                let left = places.byClient[client, default: 1] - 1
                places.byClient[client] = left > 0 ? left : nil
            }
            // The first that waited and now fits (another client's, when
            // this one's own bound holds its next).
            var started: [(client: String?, start: @Sendable (Ticket) -> Void)] = []
            while let index = places.waiting.firstIndex(where: { places.fits($0.client, maxInAll: maxInAll, maxPerClient: maxPerClient) }) {
                let waiting = places.waiting.remove(at: index)
                places.take(waiting.client)
                started.append(waiting)
            }
            return started
        }
        for waiting in next { begin(client: waiting.client, waiting.start) }
    }

    /// One admitted read's place, given back once: by `release` (its
    /// answer is made, or its body's last byte handed over), or at the
    /// latest when the last holder lets it go.
    final class Ticket: Sendable {
        let reads: LargeReads
        let client: String?
        private let released = Locked(false)

        fileprivate init(reads: LargeReads, client: String?) {
            self.reads = reads
            self.client = client
        }

        func release() {
            guard released.withLock({ released in defer { released = true }; return !released }) else { return }
            reads.release(client: client)
        }

        deinit {
            release()
        }
    }
}

extension ObservableAPI {
    /// Renders `read` on a thread of its own, its connection suspended
    /// until the answer's head is ready; the body, when large, follows a
    /// piece at a time (`BodyStream`). When the client, or the server, has
    /// as many large reads in progress as allowed, it waits for a place.
    func readApart(_ read: PendingRead, suspended: SuspendedConnection?) throws -> Reply {
        let context = read.context
        guard let connection = suspended ?? context.connection.suspend() else {
            // The server is stopping: rendered here, whole.
            return try readNow(context, fields: read.fields, rendering: read.rendering, apart: nil, wholeHere: true, suspended: nil)
        }
        largeReads.admit(client: clients.client(of: context)) { [self] ticket in
            ServiceThread.start(name: "observable.read") { [self] _ in
                let outcome: Result<HTTPResponse, any Error>
                do {
                    guard case .response(let answer) = try readNow(context, fields: read.fields, rendering: read.rendering, apart: ticket,
                                                                   suspended: connection) else { return }
                    outcome = .success(answer)
                    // A body sent a piece at a time gives the place back itself.
                    if answer.bodyStream == nil { ticket.release() }
                } catch {
                    outcome = .failure(error)
                    ticket.release()
                }
                // Given back before the answer, which the client may follow
                // with its next read at once.
                connection.answer(context.finish(outcome))
            }
        }
        // Answered by the thread, whether this connection was suspended here or before.
        return .parked
    }
}
