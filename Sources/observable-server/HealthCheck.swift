import ArgumentParser
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `observable-server healthcheck`: asks a running server's `/healthz` and
/// exits 0 when it answers 200, so a container needs no HTTP client.
struct HealthCheck: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "healthcheck", abstract: "Exit 0 when the server on this host answers GET /healthz with 200.")

    @Option(help: "Port of the server (env OBSERVABLE_PORT; default 8080).")
    var port: UInt16?

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Int = 3

    func run() throws {
        let port = try setting(port, "OBSERVABLE_PORT", default: 8080)
        guard Self.check(port: port, timeout: timeout) else { throw ExitCode.failure }
    }

    static func check(port: UInt16, timeout: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 12 else { return false }
        return String(decoding: buffer[..<n], as: UTF8.self).hasPrefix("HTTP/1.1 200")
    }
}
