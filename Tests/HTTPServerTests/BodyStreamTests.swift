import Concurrency
import Foundation
import HTTPServer
import Testing
import TestSupport

/// A body made while it is sent (`BodyStream`), through a real daemon on a
/// loopback port: the client gets exactly the bytes, the producer never
/// runs further ahead of its client than `capacity` and the socket's
/// buffers, and it stops when the client leaves or the daemon stops.
@Suite struct BodyStreamTests {
    static func expected(_ size: Int) -> [UInt8] { (0..<size).map { UInt8($0 % 251) } }

    @Test func aBodyIsSentWholeAPieceAtATime() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 20)
        for size in [0, 1, 65536, 3_000_001] {
            try connection.send("GET /body?size=\(size) HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try connection.receive()
            #expect(answer.status == 200)
            #expect(answer.headers["content-length"] == String(size))
            #expect(answer.body == Self.expected(size), "\(size) bytes")
        }
        // Kept alive throughout: one connection, four answers.
        #expect(responder.requests.withLock { $0.count } == 4)
        try waitUntil { responder.producerEnded.withLock { $0.count } == 3 && daemon.bodyCount == 0 }
        #expect(responder.producerEnded.withLock { $0 } == ["done", "done", "done"])
    }

    @Test func aHeadNeverStartsTheProducer() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 10)
        try connection.send("HEAD /body?size=1000000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = try connection.receive(method: "HEAD")
        #expect(answer.status == 200)
        #expect(answer.headers["content-length"] == "1000000")
        try waitUntil { daemon.bodyCount == 0 && responder.bodies.withLock { $0.count } == 1 }
        #expect(responder.produced.withLock { $0 } == [0])
        #expect(responder.producerEnded.withLock { $0 }.isEmpty)
    }

    /// A client that reads nothing holds at most `capacity` of the body in
    /// the server, beside the sockets' buffers; reading, it gets all of it.
    @Test func theProducerWaitsForItsClient() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        let size = 8_000_000
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 20, receiveBuffer: 16 * 1024)
        try connection.send("GET /body?size=\(size) HTTP/1.1\r\nHost: x\r\n\r\n")
        try waitUntil { responder.bodies.withLock { $0.first?.isWaitingForClient } == true }
        let ahead = responder.produced.withLock { $0[0] }
        #expect(ahead >= BodyStream.capacity)
        #expect(ahead < 4 * 1024 * 1024, "\(ahead) bytes made for a client that read none")
        let answer = try connection.receive()
        #expect(answer.body.count == size)
        #expect(answer.body == Self.expected(size))
        try waitUntil { responder.producerEnded.withLock { $0 } == ["done"] }
    }

    @Test func aClientThatLeavesEndsItsProducer() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        defer { daemon.stop() }
        do {
            let connection = try RawConnection(port: daemon.port, receiveTimeout: 10, receiveBuffer: 16 * 1024)
            try connection.send("GET /body?size=100000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try connection.receiveHead().status == 200)
            _ = try connection.receiveBytes()
        }
        // The socket is closed: the body is let go, and its producer told.
        try waitUntil(timeout: 30) { responder.producerEnded.withLock { $0.count } == 1 && daemon.bodyCount == 0 }
        #expect(responder.producerEnded.withLock { $0[0] }.hasPrefix("refused at "))
        #expect(responder.produced.withLock { $0[0] } < 100_000_000)
    }

    @Test func stopCutsABodyStillBeingSent() throws {
        let (daemon, responder) = try HTTPDaemonTests.daemon()
        let connection = try RawConnection(port: daemon.port, receiveTimeout: 10, receiveBuffer: 16 * 1024)
        try connection.send("GET /body?size=100000000 HTTP/1.1\r\nHost: x\r\n\r\n")
        try waitUntil { responder.bodies.withLock { $0.first?.isWaitingForClient } == true }
        let began = ServerClock.now
        daemon.stop()
        #expect(began.duration(to: ServerClock.now) < .seconds(10))
        try waitUntil { responder.producerEnded.withLock { $0.count } == 1 }
        #expect(responder.producerEnded.withLock { $0[0] }.hasPrefix("refused at "))
        #expect(daemon.bodyCount == 0)
    }
}
