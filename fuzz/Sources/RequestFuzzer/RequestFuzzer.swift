import Foundation
import JSON
import Logging
import ModelStore
import ModelStoreDatabases
import Models
import API
// `Connection` has no public initializer: it is made by the daemon for each
// request. The harness builds one for a daemon that never starts, which needs
// internal access (debug builds compile every module with testing enabled).
@testable import HTTPServer

/// libFuzzer entry point: one input, read two ways.
///
/// 1. The whole input is parsed by `JSONParser.parse`. Errors are fine; a
///    value that parses must survive a round trip through `JSONWriter`.
/// 2. The input is read as an HTTP request (see `FuzzRequest`) and answered by
///    the real `RouterResponder` of an `ObservableAPI` over a `Store` on a
///    temporary SQLite file. Every answer must have a sane status, an `Allow`
///    header on `405`, a JSON body whenever its `Content-Type` says JSON, and
///    must not be a `500`.
///
/// Any violated expectation calls `fatalError`, which libFuzzer reports as a
/// crash and saves the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkJSON(bytes)
    Harness.shared.dispatch(bytes)
    return 0
}

/// Parsing never crashes; what parses writes back as JSON that parses to the
/// same text again.
func checkJSON(_ bytes: [UInt8]) {
    guard let value = try? JSONParser.parse(bytes) else { return }
    let written = JSONWriter.bytes(value)
    let reparsed: JSONValue
    do {
        reparsed = try JSONParser.parse(written)
    } catch {
        fatalError("JSONWriter output does not parse (\(error)): \(String(decoding: written, as: UTF8.self))")
    }
    // 2.0 is written as 2 and reads back as an integer, so compare the text.
    let rewritten = JSONWriter.bytes(reparsed)
    guard rewritten == written else {
        fatalError("JSON round trip differs: \(String(decoding: written, as: UTF8.self)) then \(String(decoding: rewritten, as: UTF8.self))")
    }
}

/// The in-process API the requests go to, rebuilt on a fresh database every
/// `resetInterval` inputs so state (and the time a `GET /truck` takes) stays
/// bounded.
final class Harness: @unchecked Sendable {  // used from libFuzzer's one thread only
    static let shared = Harness()

    let folder: String
    let resetInterval: Int
    let allowServerErrors: Bool
    /// `FUZZ_VERBOSE=1`: print each request and its answer (to check seeds).
    let verbose: Bool
    var logger: Logger
    var store: Store!
    var responder: RouterResponder!
    var daemon: HTTPDaemon!
    /// Placeholders such as `{observer}` and the ids they stand for.
    var placeholders: [(String, String)] = []
    var count = 0
    var generation = 0

    init() {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["FUZZ_TMPDIR"] ?? (FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory())
        folder = base + "/observable-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        resetInterval = Int(environment["FUZZ_RESET_EVERY"] ?? "") ?? 2000
        allowServerErrors = environment["FUZZ_ALLOW_500"] == "1"
        verbose = environment["FUZZ_VERBOSE"] == "1"
        logger = Logger(label: "observable.fuzz")
        logger.logLevel = .critical
        atexit { Harness.removeFolder() }
        reset()
    }

    static func removeFolder() {
        try? FileManager.default.removeItem(atPath: shared.folder)
    }

    func reset() {
        if let store {
            // The store keeps the API's wake handler, which keeps the change
            // feed, which keeps the store: replacing the handler breaks that
            // cycle so the old store (and its whole state) is freed.
            store.onWake { _ in }
            store.close()
        }
        generation += 1
        let path = folder + "/fuzz-\(generation).sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: folder + "/fuzz-\(generation - 1).sqlite" + suffix) }
        do {
            store = try Store(configuration: Store.Configuration(database: path), catalog: SeedModels.catalog(), logger: logger)
        } catch {
            fatalError("cannot open the fuzz store at \(path): \(error)")
        }
        // CORS on, tokens off: every route is reachable and the CORS paths run too.
        let api = ObservableAPI(store: store, policy: AccessPolicy(corsOrigins: ["https://app.example"]), daemonGauges: { (0, 0, 0) })
        responder = api.responder()
        // Never started and never attached to the API: polls are kept from
        // parking (see `FuzzRequest.neverPark`), so nothing resumes on it.
        daemon = HTTPDaemon(configuration: HTTPDaemon.Configuration(), responder: responder, logger: logger)
        placeholders = makeFixtures()
    }

    /// Creates one of each resource so inputs can name real ids through
    /// placeholders (`{observer}`, `{order}`, …) that the fuzzer cannot guess.
    func makeFixtures() -> [(String, String)] {
        func id(_ method: String, _ path: String, _ body: String, _ key: String = "id") -> JSONValue? {
            let request = HTTPRequest(method: method, path: path, body: Array(body.utf8))
            guard case .response(let response) = responder.respond(to: request, connection: connection(for: request)),
                  (200..<300).contains(response.status)
            else { fatalError("fixture \(method) \(path) failed") }
            return (try? JSONParser.parse(response.body))?[key]
        }
        var list: [(String, String)] = []
        let donut = "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001"
        list.append(("{donut}", donut))
        if let observer = id("POST", "/observers", "")?.stringValue { list.append(("{observer}", observer)) }
        if let order = id("POST", "/truck/orders", #"{"donutId":"\#(donut)","quantity":2}"#)?.stringValue { list.append(("{order}", order)) }
        if let job = id("POST", "/jobs", #"{"total":1000}"#)?.stringValue { list.append(("{job}", job)) }
        if let post = id("POST", "/posts", #"{"imageURL":"https://example.com/a.png","height":120}"#)?.stringValue { list.append(("{post}", post)) }
        if let game = id("POST", "/games", #"{"pairs":2}"#) {
            if let gameID = game.stringValue { list.append(("{game}", gameID)) }
        }
        if let gameID = list.first(where: { $0.0 == "{game}" })?.1,
           let cards = id("GET", "/games/\(gameID)", "", "cards")?.arrayValue
        {
            for (i, card) in cards.prefix(4).enumerated() {
                if let cardID = card["id"]?.stringValue { list.append(("{card\(i)}", cardID)) }
            }
        }
        if let rows = id("GET", "/grid", "", "rows")?.arrayValue, let dot = rows.first?.arrayValue?.first?["id"]?.stringValue {
            list.append(("{dot}", dot))
        }
        return list
    }

    func connection(for request: HTTPRequest) -> Connection {
        // A pointer that is never dereferenced: only `park` would use it.
        Connection(daemon: daemon, pointer: ConnectionPointer(raw: OpaquePointer(bitPattern: 0xF00D)!),
                   context: RequestContext(method: request.method, url: request.path))
    }

    func dispatch(_ bytes: [UInt8]) {
        count += 1
        if count % resetInterval == 0 { reset() }
        let request = FuzzRequest.decode(bytes, placeholders: placeholders)
        switch responder.respond(to: request, connection: connection(for: request)) {
        case .parked:
            fatalError("a request parked although polls are kept from parking: \(request.method) \(request.path) \(request.query)")
        case .response(let response):
            if verbose {
                let body = String(decoding: response.body.prefix(300), as: UTF8.self)
                FileHandle.standardError.write(Data("\(request.method) \(request.path) \(request.query) -> \(response.status) \(body)\n".utf8))
            }
            check(response, for: request)
        }
    }

    func check(_ response: HTTPResponse, for request: HTTPRequest) {
        let what = "\(request.method) \(request.path) \(request.query)"
        guard (100...599).contains(response.status) else { fatalError("status \(response.status) for \(what)") }
        if response.status >= 500 && response.status != 503 && !allowServerErrors {
            fatalError("\(response.status) for \(what): \(String(decoding: response.body, as: UTF8.self))")
        }
        if response.status == 405 && response.header("Allow") == nil {
            fatalError("405 without Allow for \(what)")
        }
        if let type = response.header("Content-Type"), type.contains("json"), !response.body.isEmpty {
            do {
                _ = try JSONParser.parse(response.body)
            } catch {
                fatalError("\(type) body that does not parse (\(error)) for \(what): \(String(decoding: response.body, as: UTF8.self))")
            }
        }
    }
}
