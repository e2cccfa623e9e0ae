internal import CMicroHTTPD
import Concurrency
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The address a client's connections are counted under: an IPv4 address,
/// or the /64 of an IPv6 one (`osv_client_key_of`).
struct ClientAddress: Hashable, Sendable {
    let high: UInt64
    let low: UInt64
}

/// The connections open now: how many each client address holds, and how
/// far each has got in sending its request.
///
/// libmicrohttpd tells of each connection accepted and closed (`open`,
/// `close`). A connection beyond its address's limit is refused as it opens.
/// A connection whose request is still arriving `requestTimeout` after its
/// first bytes is cut by `overdue` (the daemon's clock asks once a second),
/// however steadily it trickles: libmicrohttpd's own timeout only counts
/// silence. Connections between requests are left to that idle timeout, and
/// parked or streaming ones, whose request is in, to their own deadlines.
final class OpenConnections: Sendable {
    private struct Table {
        var connections: [ObjectIdentifier: OpenConnection] = [:]
        var perAddress: [ClientAddress: Int] = [:]
    }

    private let table = Locked(Table())
    let limitPerAddress: Int
    let requestTimeout: Duration
    /// When `overdue` looks next (monotonic nanoseconds).
    private let nextLook = Atomic<UInt64>(0)

    let trusted: TrustedAddresses
    /// Past this many connections in all, only an address that holds none
    /// may open one: the last connections are kept for newcomers (a
    /// health probe, a client not yet served), however many addresses
    /// share the rest.
    let reservedAbove: Int

    init(limitPerAddress: Int, requestTimeout: Duration, trusted: TrustedAddresses = .none, connectionLimit: Int = .max) {
        self.limitPerAddress = limitPerAddress
        self.requestTimeout = requestTimeout
        self.trusted = trusted
        reservedAbove = connectionLimit == .max ? .max : connectionLimit - Self.reserve(of: connectionLimit)
    }

    /// The connections kept for addresses holding none: an eighth of the limit, at least one.
    static func reserve(of connectionLimit: Int) -> Int { max(1, connectionLimit / 8) }

    /// A connection from `address` was accepted: its record, or nil when
    /// the address holds `limitPerAddress` connections already (the caller
    /// refuses it, and it is not counted).
    func open(socket: Int32, address: ClientAddress) -> OpenConnection? {
        table.withLock { table in
            let held = table.perAddress[address, default: 0]
            if held > 0, !trusted.isEmpty, trusted.contains(address) {
                // Exempt.
            } else if held >= limitPerAddress || (held > 0 && table.connections.count >= reservedAbove) {
                return nil
            }
            table.perAddress[address] = held + 1
            let connection = OpenConnection(socket: socket, address: address)
            table.connections[ObjectIdentifier(connection)] = connection
            return connection
        }
    }

    /// libmicrohttpd closes the connection's socket once this returns.
    func close(_ connection: OpenConnection) {
        connection.socketClosing()
        table.withLock { table in
            table.connections[ObjectIdentifier(connection)] = nil
            let held = table.perAddress[connection.address, default: 1] - 1
            table.perAddress[connection.address] = held > 0 ? held : nil
        }
    }

    /// The connections whose request has been arriving for longer than the
    /// request timeout, each marked cut (so returned once); nil when the
    /// last look was less than a second ago. The table's lock is held only
    /// to pick the connections between requests or receiving one (a parked
    /// one costs a load); their sockets are looked at after it.
    func overdue(now: ServerClock.Instant) -> [OpenConnection]? {
        let due = nextLook.load(ordering: .relaxed)
        guard now.nanoseconds >= due,
              nextLook.compareExchange(expected: due, desired: now.advanced(by: .seconds(1)).nanoseconds, ordering: .relaxed).exchanged
        else { return nil }
        let watched = table.withLock { table in table.connections.values.filter { !$0.hasRequest } }
        return watched.filter { $0.isOverdue(now: now, timeout: requestTimeout) }
    }
}

/// One open connection, as `OpenConnections` follows it: its socket, its
/// client's address and where it stands with its request.
///
/// That stand is one word, changed by libmicrohttpd's thread for the
/// connection (a request is in; its answer is done) and by the clock's look
/// (bytes arrived; the deadline passed) without a lock: `Phase` in the low
/// three bits, and above them when the request began arriving, or between
/// requests a count that only grows, so that a look never mistakes a later
/// wait for the one it saw.
final class OpenConnection: Sendable {
    enum Phase: UInt64 {
        /// The request is in: being answered, parked or streaming.
        case received = 0
        /// Between requests, not looked at yet.
        case idle = 1
        /// Between requests, the bytes received so far noted (`mark`).
        case watching = 2
        /// More bytes came: a request is arriving, since the time above.
        case receiving = 3
        /// Its request took too long: cut.
        case cut = 4
    }

    private struct Socket {
        /// libmicrohttpd has not closed the socket (its number may be
        /// another connection's once it has).
        var isOpen = true
        /// The bytes received when the connection was last seen between
        /// requests (zero for a new one).
        var mark: UInt64 = 0
    }

    let socket: Int32
    let address: ClientAddress
    // A new connection has received nothing yet: its first bytes begin a request.
    private let state = Atomic<UInt64>(Phase.watching.rawValue)
    private let socketState = Locked(Socket())

    init(socket: Int32, address: ClientAddress) {
        self.socket = socket
        self.address = address
    }

    private static func phase(_ word: UInt64) -> Phase { Phase(rawValue: word & 7) ?? .received }

    /// Whether the current request is in (nothing to watch).
    var hasRequest: Bool { Self.phase(state.load(ordering: .relaxed)) == .received }

    /// The request is in, and is answered now or later; false when the
    /// connection was cut meanwhile (the caller closes it).
    func requestReceived() -> Bool {
        var word = state.load(ordering: .relaxed)
        while true {
            if Self.phase(word) == .received { return true }
            if Self.phase(word) == .cut { return false }
            let (exchanged, original) = state.compareExchange(expected: word, desired: word & ~7, ordering: .relaxed)
            if exchanged { return true }
            word = original
        }
    }

    /// The request's answer is done; the connection waits for the next one.
    func requestFinished() {
        var word = state.load(ordering: .relaxed)
        while true {
            let (exchanged, original) = state.compareExchange(
                expected: word, desired: ((word >> 3) &+ 1) << 3 | Phase.idle.rawValue, ordering: .relaxed)
            if exchanged { return }
            word = original
        }
    }

    /// The clock's look: notes the bytes of a connection between requests,
    /// notices a request that began arriving, and marks cut (once) one whose
    /// request has been arriving for `timeout`; returns whether it did that.
    func isOverdue(now: ServerClock.Instant, timeout: Duration) -> Bool {
        let word = state.load(ordering: .relaxed)
        switch Self.phase(word) {
        case .idle:
            guard noteReceivedBytes() else { return false }
            _ = state.compareExchange(expected: word, desired: word & ~7 | Phase.watching.rawValue, ordering: .relaxed)
            return false
        case .watching:
            guard receivedMoreBytes() else { return false }
            // (When the request came in whole meanwhile, this fails: no longer watching.)
            _ = state.compareExchange(expected: word, desired: now.nanoseconds << 3 | Phase.receiving.rawValue, ordering: .relaxed)
            return false
        case .receiving:
            guard ServerClock.Instant(nanoseconds: word >> 3).advanced(by: timeout) <= now else { return false }
            return state.compareExchange(expected: word, desired: word & ~7 | Phase.cut.rawValue, ordering: .relaxed).exchanged
        case .received, .cut:
            return false
        }
    }

    /// Notes the bytes received so far; false when the socket is gone or
    /// the kernel cannot tell.
    private func noteReceivedBytes() -> Bool {
        socketState.withLock { socket in
            guard socket.isOpen else { return false }
            let bytes = osv_received_bytes(self.socket)
            guard bytes != UInt64.max else { return false }
            socket.mark = bytes
            return true
        }
    }

    /// Whether bytes came since they were noted.
    private func receivedMoreBytes() -> Bool {
        socketState.withLock { socket in
            guard socket.isOpen else { return false }
            let bytes = osv_received_bytes(self.socket)
            return bytes != UInt64.max && bytes > socket.mark
        }
    }

    /// Writes `refusal` and shuts the socket, which libmicrohttpd then sees
    /// closed (and closes); nothing (`refusal` not asked for) once
    /// libmicrohttpd has closed it.
    func cut(with refusal: () -> HTTPResponse) {
        socketState.withLock { socket in
            guard socket.isOpen else { return }
            refusal().write(closingTo: self.socket)
            shutdown(self.socket, Int32(SHUT_RDWR))
        }
    }

    /// libmicrohttpd closes the socket right after (it tells before it closes).
    func socketClosing() {
        socketState.withLock { $0.isOpen = false }
    }
}
