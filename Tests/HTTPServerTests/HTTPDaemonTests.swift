import Concurrency
import Dispatch
import Foundation
import HTTPServer
import Testing
import TestSupport

/// A responder of the test's own, knowing nothing of models: `/park` parks
/// its connection (for `?timeout=` seconds), `/suspend` suspends it, and
/// anything else is echoed. What it parks or suspends is handed to the test.
final class EchoResponder: HTTPResponder {
    let requests = Locked<[HTTPRequest]>([])
    let parked = Locked<[ParkedConnection]>([])
    let suspended = Locked<[SuspendedConnection]>([])
    /// The bodies `/body` made, with the bytes each producer wrote and
    /// whether it has returned (and why).
    let bodies = Locked<[BodyStream]>([])
    let produced = Locked<[Int]>([])
    let producerEnded = Locked<[String]>([])

    static let deadlineAnswer = HTTPResponse(status: 204, headers: [("X-Answered-By", "deadline")])

    /// The daemon's refusals take the form the responder gives them.
    func refusal(status: Int, detail: String, request: HTTPRequest?) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/x-refusal")], body: Array(detail.utf8))
    }

    func respond(to request: HTTPRequest, connection: Connection) -> Reply {
        requests.withLock { $0.append(request) }
        switch request.path {
        case "/park":
            let seconds = Double(request.query["timeout"] ?? "") ?? 30
            guard let parked = connection.park(timeout: .milliseconds(Int64(seconds * 1000)), onDeadline: { Self.deadlineAnswer })
            else { return .response(HTTPResponse(status: 503)) }
            self.parked.withLock { $0.append(parked) }
            return .parked
        case "/body":
            // `?size=` bytes, byte i being i % 251, made 64 KiB at a time.
            let size = Int(request.query["size"] ?? "") ?? 0
            let index = bodies.withLock { bodies in
                produced.withLock { $0.append(0) }
                return bodies.count
            }
            let body = BodyStream(length: size) { [self] body in
                var offset = 0
                while offset < size {
                    let piece = (offset..<min(size, offset + 65536)).map { UInt8($0 % 251) }
                    guard body.write(piece) else {
                        producerEnded.withLock { $0.append("refused at \(offset)") }
                        return
                    }
                    offset += piece.count
                    produced.withLock { $0[index] = offset }
                }
                producerEnded.withLock { $0.append("done") }
            }
            bodies.withLock { $0.append(body) }
            var response = HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")])
            response.bodyStream = body
            return .response(response)
        case "/suspend":
            guard let suspended = connection.suspend() else { return .response(HTTPResponse(status: 503)) }
            self.suspended.withLock { $0.append(suspended) }
            return .parked
        default:
            let head = "\(request.method) \(request.path) a=\(request.query["a"] ?? "-") x-test=\(request.header("x-test") ?? "-")\n"
            return .response(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array(head.utf8) + request.body))
        }
    }
}

@Suite struct HTTPDaemonTests {
    /// A started daemon on a free loopback port.
    static func daemon(_ configure: (inout HTTPDaemon.Configuration) -> Void = { _ in }) throws -> (HTTPDaemon, EchoResponder) {
        var configuration = HTTPDaemon.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 2
        configure(&configuration)
        let responder = EchoResponder()
        let daemon = HTTPDaemon(configuration: configuration, responder: responder)
        try daemon.start()
        return (daemon, responder)
    }

    static func request(_ daemon: HTTPDaemon, _ text: String) throws -> RawResponse {
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 10)
        try connection.send(text)
        return try connection.receive()
    }

    @Test func aRequestIsAnsweredWithWhatTheResponderReturns() throws {
        let (daemon, responder) = try Self.daemon()
        defer { daemon.stop() }
        #expect(daemon.port != 0)
        let get = try Self.request(daemon, "GET /echo/caf%C3%A9?a=1&a=2 HTTP/1.1\r\nHost: x\r\nX-Test: yes\r\n\r\n")
        #expect(get.status == 200)
        #expect(get.headers["content-type"] == "text/plain")
        // The path is percent-decoded; a repeated query name keeps its last value.
        #expect(get.text == "GET /echo/café a=2 x-test=yes\n")
        let post = try Self.request(daemon, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        #expect(post.text == "POST /echo a=- x-test=-\nhello")
        #expect(responder.requests.withLock { $0.count } == 2)
    }

    @Test func aBodyOverTheLimitIsRefusedWith413AndNeverReachesTheResponder() throws {
        let (daemon, responder) = try Self.daemon { $0.maxBody = 16 }
        defer { daemon.stop() }
        let announced = try Self.request(daemon, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n" + String(repeating: "a", count: 17))
        #expect(announced.status == 413)
        #expect(announced.headers["content-type"] == "text/x-refusal")
        #expect(announced.text == "The request body exceeds 16 bytes.")
        // Without a length announced, the body is counted as it arrives.
        let chunked = try Self.request(daemon, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "a\r\naaaaaaaaaa\r\na\r\naaaaaaaaaa\r\n0\r\n\r\n")
        #expect(chunked.status == 413)
        #expect(responder.requests.withLock { $0.isEmpty })
        let atTheLimit = try Self.request(daemon, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n" + String(repeating: "b", count: 16))
        #expect(atTheLimit.status == 200)
        #expect(atTheLimit.text.hasSuffix(String(repeating: "b", count: 16)))
    }

    @Test func aParkedConnectionIsAnsweredOnceByWhoeverAnswersFirst() throws {
        let (daemon, responder) = try Self.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 10)
        try connection.send("GET /park?timeout=30 HTTP/1.1\r\nHost: x\r\n\r\n")
        try waitUntil { daemon.parkedCount == 1 && responder.parked.withLock { $0.count } == 1 }
        let parked = try #require(responder.parked.withLock { $0.first })
        #expect(parked.isParked)
        daemon.resume([(parked, HTTPResponse(status: 200, body: Array("first".utf8)))])
        daemon.resume([(parked, HTTPResponse(status: 200, body: Array("second".utf8)))])
        let answer = try connection.receive()
        #expect(answer.status == 200)
        #expect(answer.text == "first")
        #expect(!parked.isParked)
        #expect(daemon.parkedCount == 0)
    }

    @Test func aParkedConnectionIsAnsweredAtItsDeadline() throws {
        let (daemon, _) = try Self.daemon()
        defer { daemon.stop() }
        let start = ContinuousClock.now
        let answer = try Self.request(daemon, "GET /park?timeout=0.2 HTTP/1.1\r\nHost: x\r\n\r\n")
        let waited = ContinuousClock.now - start
        #expect(answer.status == 204)
        #expect(answer.headers["x-answered-by"] == "deadline")
        #expect(waited >= .milliseconds(200))
        #expect(waited < .seconds(5))
        #expect(daemon.parkedCount == 0)
    }

    /// A stop answers parked connections with their deadline answer at
    /// once, refuses new connections, and waits for a suspended
    /// connection's answer before it returns.
    @Test func stopAnswersParkedConnectionsAndWaitsForSuspendedOnes() throws {
        let (daemon, responder) = try Self.daemon()
        let parked = try RawConnection(port: daemon.port, receiveTimeout: 10)
        try parked.send("GET /park?timeout=30 HTTP/1.1\r\nHost: x\r\n\r\n")
        let suspended = try RawConnection(port: daemon.port, receiveTimeout: 10)
        try suspended.send("GET /suspend HTTP/1.1\r\nHost: x\r\n\r\n")
        try waitUntil { daemon.parkedCount == 1 && responder.suspended.withLock { $0.count } == 1 }

        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            daemon.stop()
            stopped.signal()
        }
        try waitUntil { daemon.isStopping }
        let deadlineAnswer = try parked.receive()
        #expect(deadlineAnswer.status == 204)
        #expect(deadlineAnswer.headers["x-answered-by"] == "deadline")
        #expect(throws: TestHTTPError.self) { try Self.request(daemon, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n") }
        // Still waiting for the suspended one (looked at for a tenth of a second).
        #expect(stopped.wait(timeout: .now() + 0.1) == .timedOut)

        try #require(responder.suspended.withLock { $0.first }).answer(HTTPResponse(status: 201, body: Array("late".utf8)))
        let late = try suspended.receive()
        #expect(late.status == 201)
        #expect(late.text == "late")
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }

    @Test func aHostThatIsNoAddressIsRefusedAtStart() {
        var configuration = HTTPDaemon.Configuration()
        configuration.host = "localhost"
        configuration.port = 0
        let daemon = HTTPDaemon(configuration: configuration, responder: EchoResponder())
        #expect(throws: HTTPDaemon.StartError.self) { try daemon.start() }
    }

    /// A second daemon on a port another one serves is refused at start,
    /// rather than sharing the port and taking part of its connections;
    /// once the first one stops, the port can be bound again at once.
    @Test func aPortAlreadyServedIsRefusedAndFreedByStopping() throws {
        let (first, _) = try Self.daemon()
        var configuration = HTTPDaemon.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = first.port
        let second = HTTPDaemon(configuration: configuration, responder: EchoResponder())
        #expect(throws: HTTPDaemon.StartError.self) { try second.start() }
        // Every connection still reaches the first.
        for _ in 0..<20 {
            #expect(try Self.request(first, "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status == 200)
        }
        // A connection it served leaves the port in TIME_WAIT: a restart binds anyway.
        let port = first.port
        first.stop()
        let again = HTTPDaemon(configuration: configuration, responder: EchoResponder())
        try again.start()
        #expect(again.port == port)
        again.stop()
    }

    /// The tests' client closes the socket of a refused connection once:
    /// closed twice, the second close may take a descriptor another thread
    /// opened in between, such as a connection of a daemon in this process.
    @Test func aRefusedTestConnectionClosesItsSocketOnce() throws {
        // A port bound and not listening refuses connections.
        let bound = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(bound) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(bound, $0, length) == 0 && getsockname(bound, $0, &length) == 0 }
        })
        let port = UInt16(bigEndian: address.sin_port)
        let closedUnderneath = descriptorsClosedUnderneath {
            for _ in 0..<5_000 {
                #expect(throws: TestHTTPError.self) { try RawConnection(port: port) }
            }
        }
        #expect(closedUnderneath == 0)
    }
}
