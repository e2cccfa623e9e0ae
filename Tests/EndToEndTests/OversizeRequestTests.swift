import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// Requests built to cost the server far more than their size suggests are
/// answered (or their connection closed) at once, and the server goes on.
/// Nothing here is timed: a request fails when no answer comes before the
/// socket's receive deadline, far shorter than the 30 s idle timeout that
/// used to end such requests.
@Suite struct OversizeRequestTests {
    static let deadline: Double = 5

    enum Outcome: Equatable, CustomStringConvertible {
        case answered(status: Int, isProblem: Bool)
        case closed
        case nothingWithinDeadline

        var description: String {
            switch self {
            case .answered(let status, let isProblem): return "\(status)\(isProblem ? " problem+json" : "")"
            case .closed: return "closed"
            case .nothingWithinDeadline: return "no answer within \(OversizeRequestTests.deadline) s"
            }
        }
    }

    /// What the server does with `bytes` sent on a fresh connection.
    static func outcome(of bytes: [UInt8], port: UInt16) throws -> Outcome {
        let connection = try TestConnection(port: port, receiveTimeout: deadline)
        // A server that refuses early may close before everything is sent.
        try? connection.sendRaw(bytes)
        do {
            let response = try connection.receive()
            let isProblem = response.header("Content-Type") == "application/problem+json"
                && response.json["status"] == .int(Int64(response.status))
            return .answered(status: response.status, isProblem: isProblem)
        } catch TestHTTPError.io(let message) {
            if message == "recv failed: \(EAGAIN)" { return .nothingWithinDeadline }
            if message == "connection closed" || message == "recv failed: \(ECONNRESET)" { return .closed }
            throw TestHTTPError.io(message)
        }
    }

    static func get(_ target: [UInt8], headers: String = "") -> [UInt8] {
        Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n".utf8)
    }

    static func query(parameters: Int) -> String {
        (0..<parameters).map { "a\($0)=1" }.joined(separator: "&")
    }

    static func expectServing(_ server: TestServer) throws {
        #expect(try server.client.get("/truck?fields=name").json == ["name": "Food Truck"])
    }

    @Test func aJSONBodyOfEightyThousandKeysIsRefusedPromptlyAndTheServerGoesOn() throws {
        let server = try TestServer()
        let body = "{" + (0..<80_000).map { String(format: "\"k%05d\":0", $0) }.joined(separator: ",") + "}"
        #expect(body.utf8.count > 850_000 && body.utf8.count < 1 << 20)
        let connection = try TestConnection(port: server.port, receiveTimeout: Self.deadline)
        let response = try connection.request("POST", "/truck/donuts", body: Array(body.utf8))
        #expect(response.status == 400)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.json["detail"]?.stringValue?.hasPrefix("Unknown field \"k00000\"") == true)
        #expect(try server.client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 4)
        try Self.expectServing(server)
    }

    /// Each parameter libmicrohttpd parses takes a record of 64 bytes from
    /// the connection's memory (8 KiB); past what fits, such a request was
    /// never answered. A line that fits the connection's memory is refused
    /// by the server (its 414, problem+json); a longer one (10,000
    /// parameters) libmicrohttpd refuses itself (its own 414, an HTML page).
    @Test(arguments: [(500, true), (1_000, true), (10_000, false)])
    func aQueryWithThousandsOfParametersIsAnswered414AtOnce(parameters: Int, byTheServer: Bool) throws {
        let server = try TestServer()
        let outcome = try Self.outcome(of: Self.get(Array("/truck?\(Self.query(parameters: parameters))".utf8)), port: server.port)
        #expect(outcome == .answered(status: 414, isProblem: byTheServer))
        try Self.expectServing(server)
    }

    @Test func aQueryOfAHundredParametersIsServedAndOneMoreIs414() throws {
        let server = try TestServer()
        #expect(try server.client.get("/truck?\(Self.query(parameters: 99))&fields=name").json == ["name": "Food Truck"])
        let refused = try server.client.get("/truck?\(Self.query(parameters: 100))&fields=name")
        #expect(refused.status == 414)
        #expect(refused.json["detail"] == "A query may have at most 100 parameters.")
    }

    /// Around the size of the connection memory a single parameter was enough:
    /// some lengths were never answered. Each length now gets an answer or a
    /// closed connection at once (which one depends on how much fits).
    @Test func aQueryValueAsLongAsTheConnectionMemoryIsAnsweredOrClosedAtOnce() throws {
        let server = try TestServer()
        var outcomes: [Int: Outcome] = [:]
        for length in stride(from: 15_600, through: 16_600, by: 20) {
            outcomes[length] = try Self.outcome(of: Self.get(Array("/truck?a=\(String(repeating: "v", count: length))".utf8)), port: server.port)
        }
        #expect(outcomes.filter { $0.value == .nothingWithinDeadline }.keys.sorted() == [])
        #expect(try Self.outcome(of: Self.get(Array("/truck?a=\(String(repeating: "v", count: 100_000))".utf8)), port: server.port)
            == .answered(status: 414, isProblem: false))
        try Self.expectServing(server)
    }

    /// libmicrohttpd refuses these itself, with its own 431 (an HTML page).
    @Test func manyHeadersAndOneHugeHeaderAreAnswered431AtOnce() throws {
        let server = try TestServer()
        for count in [300, 1_000] {
            let headers = (0..<count).map { "X-H\($0): 1\r\n" }.joined()
            #expect(try Self.outcome(of: Self.get(Array("/truck".utf8), headers: headers), port: server.port)
                == .answered(status: 431, isProblem: false), "\(count) headers")
        }
        let huge = "X-Padding: \(String(repeating: "b", count: 100_000))\r\n"
        #expect(try Self.outcome(of: Self.get(Array("/truck".utf8), headers: huge), port: server.port)
            == .answered(status: 431, isProblem: false))
        try Self.expectServing(server)
    }

    /// A connection's memory (8 KiB unless `--connection-memory` says
    /// otherwise) bounds the request line plus headers: a 7,000-byte header
    /// is served, a 9,000-byte one refused with libmicrohttpd's 431, and 16
    /// KiB of memory serves a 12,000-byte header. A size outside 4 KiB…1 MiB
    /// does not start.
    @Test func theConnectionMemoryBoundsTheHeadersAndCanBeRaised() throws {
        func header(_ bytes: Int) -> String { "X-Padding: \(String(repeating: "b", count: bytes))\r\n" }
        let folder = temporaryFolder()
        let standard = try ServerProcess(folder: folder)
        #expect(try Self.outcome(of: Self.get(Array("/truck/orderCount".utf8), headers: header(7_000)), port: standard.port)
            == .answered(status: 200, isProblem: false))
        #expect(try Self.outcome(of: Self.get(Array("/truck/orderCount".utf8), headers: header(9_000)), port: standard.port)
            == .answered(status: 431, isProblem: false))
        standard.stop()
        let raised = try ServerProcess(folder: folder, arguments: ["--connection-memory", "16384"])
        #expect(try Self.outcome(of: Self.get(Array("/truck/orderCount".utf8), headers: header(12_000)), port: raised.port)
            == .answered(status: 200, isProblem: false))
        raised.stop()
        #expect(throws: TestHTTPError.self) { try ServerProcess(folder: folder, arguments: ["--connection-memory", "1000"]) }
    }

    /// A NUL byte hides what follows it in the target from the server but not
    /// from libmicrohttpd, which still parses a query after it: such a target
    /// is refused, and a hidden query that overflows the connection memory is
    /// answered as any other. Without a query, what follows the NUL is not
    /// seen: the path ends there.
    @Test func aTargetWithANulByteAndAQueryIsRefused() throws {
        let server = try TestServer()
        let refused = try Self.outcome(of: Self.get(Array("/truck".utf8) + [0] + Array("?fields=name".utf8)), port: server.port)
        #expect(refused == .answered(status: 400, isProblem: true))
        let hidden = try Self.outcome(of: Self.get(Array("/truck".utf8) + [0] + Array("?\(Self.query(parameters: 500))".utf8)), port: server.port)
        #expect(hidden == .answered(status: 414, isProblem: true))
        let cut = try TestConnection(port: server.port, receiveTimeout: Self.deadline)
        try cut.sendRaw(Self.get(Array("/truck/orderCount".utf8) + [0] + Array("junk".utf8)))
        #expect(try cut.receive().json == ["orderCount": 0])
        try Self.expectServing(server)
    }

    /// A query whose parameters overflow the connection's memory before
    /// the server's limit of 100 is answered by the server, at once, and
    /// the same query fits a larger memory.
    @Test func aQueryOverflowingTheConnectionMemoryIsTheServers414() throws {
        let folder = temporaryFolder()
        let query = "/truck?\(Self.query(parameters: 90))&x=\(String(repeating: "v", count: 3_000))&fields=name"
        let standard = try ServerProcess(folder: folder)
        let connection = try TestConnection(port: standard.port, receiveTimeout: Self.deadline)
        try connection.sendRaw(Self.get(Array(query.utf8)))
        let refused = try connection.receive()
        #expect(refused.status == 414)
        #expect(refused.json["detail"]?.stringValue?.hasPrefix("The query has more parameters than the connection's memory holds") == true)
        #expect(try standard.client.get("/truck?fields=name").json == ["name": "Food Truck"])
        standard.stop()
        let raised = try ServerProcess(folder: folder, arguments: ["--connection-memory", "16384"])
        #expect(try raised.client.get(query).json == ["name": "Food Truck"])
        raised.stop()
    }

    /// libmicrohttpd parses the query; the server reads what it parsed.
    @Test func queryParametersAreDecodedAsBefore() throws {
        let server = try TestServer()
        let client = server.client
        func detail(_ query: String) throws -> String? { try client.get("/truck?\(query)").json["detail"]?.stringValue }
        // A single-valued parameter twice is refused, not taken from one copy.
        #expect(try client.get("/truck?fields=bogus&fields=name").status == 400)
        #expect(try client.get("/truck?&&na%6De=x&fields=na%6De&").json == ["name": "Food Truck"])
        #expect(try client.get("/truck?fields=name+,orderCount").json == ["name": "Food Truck", "orderCount": 0])
        #expect(try detail("fields=a%2Bb+c")?.hasPrefix("unknown field \"a+b c\"") == true)
        #expect(try detail("fields=na%00me")?.hasPrefix("unknown field \"na%00me\"") == true)
        #expect(try detail("fields=%%41%C3%A9%zz")?.hasPrefix("unknown field \"%Aé%zz\"") == true)
        #expect(try detail("fields==name%26x")?.hasPrefix("unknown field \"=name&x\"") == true)
        #expect(try detail("fields")?.hasPrefix("unknown field \"\"") == true)
    }
}
