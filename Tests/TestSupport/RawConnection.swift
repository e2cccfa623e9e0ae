import Foundation
#if canImport(Glibc)
import Glibc
#endif

public enum TestHTTPError: Error {
    case connect(Int32)
    case io(String)
}

/// An answer as read off the wire.
public struct RawResponse: Sendable {
    public let status: Int
    /// Header names in lower case.
    public let headers: [String: String]
    public let body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A minimal blocking HTTP/1.1 connection over one TCP socket to a server on
/// loopback: it writes exactly the bytes a test gives it (so tests control
/// what is sent and when, and can hold many connections open) and reads
/// answers framed by `Content-Length`.
public final class RawConnection {
    let fd: Int32
    private var buffer: [UInt8] = []

    /// `receiveBuffer`: the socket's receive buffer in bytes (small: a
    /// client that the server can fill quickly). `source`: the loopback
    /// address to connect from (all of 127/8 is loopback on Linux, so a
    /// test can be several clients), 127.0.0.1 unless given.
    public init(port: UInt16, receiveTimeout: Double = 70, receiveBuffer: Int32? = nil, source: String? = nil) throws {
        // The socket is `fd` only once connected: `deinit` closes `fd`, and
        // it runs when an initializer throws after setting every property,
        // so a socket closed here as well would be closed twice (the second
        // time perhaps another thread's new descriptor, such as a server's
        // connection in the same process).
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestHTTPError.connect(errno) }
        if var size = receiveBuffer {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        // Bound to `source` (when given), then connected to the server.
        let steps: [(String, UInt16, (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32)] =
            (source.map { [($0, UInt16(0), bind)] } ?? []) + [("127.0.0.1", port, connect)]
        for (host, port, step) in steps {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(host)
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { step(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else {
                let error = errno
                close(socket)
                throw TestHTTPError.connect(error)
            }
        }
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout - receiveTimeout.rounded(.down)) * 1_000_000))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        fd = socket
    }

    deinit { close(fd) }

    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestHTTPError.io("send failed: \(errno)") }
            sent += n
        }
    }

    /// Reads one answer (`HEAD`, `204` and `304` have no body).
    public func receive(method: String = "GET") throws -> RawResponse {
        let head = try receiveHead()
        let length = (method == "HEAD" || head.status == 204 || head.status == 304) ? 0 : Int(head.headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { try fill() }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return RawResponse(status: head.status, headers: head.headers, body: body)
    }

    /// Reads an answer's status line and headers only, leaving its body to
    /// `receiveBytes` (a stream's).
    public func receiveHead() throws -> RawResponse {
        while true {
            if let end = headEnd() {
                var lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestHTTPError.io("bad status line") }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                buffer.removeFirst(end + 4)
                return RawResponse(status: status, headers: headers, body: [])
            }
            try fill()
        }
    }

    /// The bytes received and not yet taken, waiting for some when there
    /// are none (up to the receive timeout); throws once the server closed.
    public func receiveBytes() throws -> [UInt8] {
        if buffer.isEmpty { try fill() }
        defer { buffer.removeAll() }
        return buffer
    }

    /// Bytes received but not yet read as part of an answer.
    public var unread: [UInt8] { buffer }

    /// True when the server has closed the connection (reads EOF, or a
    /// reset: a server that closes with bytes of ours unread resets it).
    public func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        return (0...(buffer.count - 4)).first { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw TestHTTPError.io(n == 0 ? "connection closed" : "recv failed: \(errno)") }
        buffer.append(contentsOf: chunk[..<n])
    }
}
