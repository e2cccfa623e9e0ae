internal import CMicroHTTPD
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import Concurrency
import Synchronization

// The request lifecycle, called from libmicrohttpd's callbacks: a request's
// target, its head (framing, limits), its body, its answer, its end.
extension HTTPDaemon {

    func handle(connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>, version: UnsafePointer<CChar>?,
                uploadData: UnsafePointer<CChar>?,
                uploadSize: UnsafeMutablePointer<Int>, contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result
    {
        guard let raw = contextSlot.pointee else {
            let context = RequestContext()
            contextSlot.pointee = Unmanaged.passRetained(context).toOpaque()
            return start(context, connection: connection, url: url, method: method, version: version)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        // A request with a query has had its context since `takeTarget`.
        guard context.isStarted else { return start(context, connection: connection, url: url, method: method, version: version) }
        if uploadSize.pointee > 0 {
            let size = uploadSize.pointee
            if context.body.count + size > configuration.maxBody {
                // A chunked body (a longer announced one was refused at once):
                // answered as soon as it passes the limit. libmicrohttpd
                // cannot queue an answer before the body's end, so it is
                // written here and the connection closed.
                context.body = []
                context.answered = true
                if requestIsIn(connection) { refusal(bodyTooLarge, of: context).write(closingTo: osv_connection_fd(connection)) }
                return .NO
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: size) { bytes in
                    context.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size))
                }
            }
            uploadSize.pointee = 0
            return .YES
        }
        if let stream = context.stream {
            // Resumed (or never suspended) to end: closed, as its head said.
            return stream.isHandedBack ? .NO : .YES
        }
        if let parked = context.parked {
            // Resumed: the answer was stored before resuming.
            guard let response = parked.takeAnswer() else { return .NO }
            return send(response, on: connection, context: context)
        }
        if context.answered { return .YES }
        guard requestIsIn(connection) else { return .NO }
        var request = HTTPRequest(
            method: context.method,
            path: context.url,
            query: context.query,
            fields: context.fields,
            body: context.body)
        request.repeatedQuery = context.repeatedQuery
        context.body = []
        context.fields = []
        let handle = Connection(daemon: self, pointer: ConnectionPointer(raw: connection), context: context)
        switch responder.respond(to: request, connection: handle) {
        case .response(let response):
            return send(response, on: connection, context: context)
        case .parked:
            // A stream opens now; one whose client left already is closed.
            if let stream = context.stream { return stream.open() ? .YES : .NO }
            // What only the handler read is not kept while the poll waits:
            // 50,000 of them hold it for as long as they are parked.
            context.query = [:]
            return .YES
        }
    }

    /// The first call for a request: its headers are in, its body is not.
    /// A request refused here (its framing, its target, its announced
    /// length) is answered before its body is read, and its connection
    /// closed.
    private func start(_ context: RequestContext, connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                       version: UnsafePointer<CChar>?) -> MHD_Result
    {
        // Its query overflowed the connection's memory, and the server
        // answered already (`queryOverflowed`).
        if osv_response_queued(connection) != 0 { return .NO }
        let method = methodName(method)
        let path = Self.path(ofTarget: url, method: method)
        context.start(method: method, url: path ?? String(cString: url))
        context.isHTTP10 = version.map { strcmp($0, "HTTP/1.0") == 0 } ?? false
        inFlight.add(1, ordering: .relaxed)
        // Read first, refused or not: a refusal is answered as any answer
        // to its request (its origin's CORS headers).
        let head = headerFields(connection)
        context.fields = head.values
        if context.refusal == nil { readQuery(connection, into: context) }
        if let refusal = context.refusal {
            return refuse(refusal, on: connection, context: context)
        }
        let framing = head.framing
        if let refusal = Self.framingRefusal(framing, isHTTP10: context.isHTTP10) ?? Self.repeatedFieldRefusal(head.values) {
            return refuse(refusal, on: connection, context: context)
        }
        if path == nil {
            return refuse((400, "The request target is neither a path (/…), nor an absolute URL (http://host/…), nor * for OPTIONS."),
                          on: connection, context: context)
        }
        // An announced oversize body is refused before it is read.
        if framing.content_lengths > 0, framing.content_length > UInt64(configuration.maxBody) {
            return refuse(bodyTooLarge, on: connection, context: context)
        }
        return .YES
    }

    /// `413` for a body over the limit.
    private var bodyTooLarge: (status: Int, detail: String) {
        (413, "The request body exceeds \(configuration.maxBody) bytes.")
    }

    /// The responder's answer to a request the daemon refuses (asked once
    /// for each refusal sent), with what was read of the request.
    private func refusal(_ refusal: (status: Int, detail: String), of context: RequestContext) -> HTTPResponse {
        let request = HTTPRequest(method: context.method, path: context.url, query: context.query, fields: context.fields, body: [])
        return responder.refusal(status: refusal.status, detail: refusal.detail, request: request)
    }

    /// `response`, closing its connection.
    private func closing(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.setHeader("Connection", "close")
        return response
    }

    /// Answers a request before its body is read, and closes its connection.
    private func refuse(_ refusal: (status: Int, detail: String), on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
        guard requestIsIn(connection) else { return .NO }
        return send(closing(self.refusal(refusal, of: context)), on: connection, context: context)
    }

    /// Called with a request's target (path and query, as sent) before
    /// libmicrohttpd parses its query; the context returned, if any, becomes
    /// the request's. Only the target given is read: its parameters are
    /// libmicrohttpd's to parse (`readQuery`).
    func takeTarget(_ target: UnsafePointer<CChar>, connection: OpaquePointer) -> UnsafeMutableRawPointer? {
        let hasQuery = strchr(target, Int32(UInt8(ascii: "?"))) != nil
        let hasBlank = Self.hasBlankOrControl(target)
        let hasEncodedSlash = Self.pathHasEncodedSlash(target)
        guard hasQuery || hasBlank || hasEncodedSlash else { return nil }
        let context = RequestContext()
        context.targetHasQuery = hasQuery
        if hasBlank {
            // libmicrohttpd takes what lies between the method and the
            // version as the target, blanks and all (`GET /a b HTTP/1.1`).
            context.refusal = (400, "The request target contains whitespace or a control character.")
        } else if hasEncodedSlash {
            // Decoded, `/truck%2forderCount` would be `/truck/orderCount`: a
            // path a proxy's rules did not see.
            context.refusal = (400, "The request path contains an encoded slash (%2F): a path segment cannot hold a /.")
        }
        return Unmanaged.passRetained(context).toOpaque()
    }

    /// Reads the query's parameters as libmicrohttpd parsed them (split at
    /// `&` and at the first `=`, `+` as a space, percent-decoded by
    /// `osv_unescape`, which leaves `%00` encoded; a name without `=` has
    /// the value "", a repeated name keeps its last value) into `context`,
    /// or sets why the request is refused for them.
    private func readQuery(_ connection: OpaquePointer, into context: RequestContext) {
        guard context.targetHasQuery else {
            // A NUL byte in the target hid its query from `takeTarget`, not
            // from libmicrohttpd, which parsed it.
            if MHD_get_connection_values_n(connection, .GET_ARGUMENT_KIND, nil, nil) > 0 {
                context.refusal = (400, "The request target contains a NUL byte.")
            }
            return
        }
        var query = QueryParameters(limit: configuration.maxQueryParameters)
        withUnsafeMutablePointer(to: &query) { query in
            _ = MHD_get_connection_values_n(connection, .GET_ARGUMENT_KIND, collectParameter, UnsafeMutableRawPointer(query))
        }
        if query.count > configuration.maxQueryParameters {
            context.refusal = (414, "A query may have at most \(configuration.maxQueryParameters) parameters.")
        } else {
            context.query = query.values
            context.repeatedQuery = query.repeated
        }
    }

    /// libmicrohttpd could not record a parameter of this request's query in
    /// the connection's memory (`osv_unescape` tells): its own refusal is
    /// never sent, so the server's is written here, and the connection ends.
    func queryOverflowed(_ connection: OpaquePointer) {
        let socket = osv_connection_fd(connection)
        guard socket >= 0 else { return }
        let detail = "The query has more parameters than the connection's memory holds "
            + "(\(configuration.connectionMemory) bytes for the request line, its parameters and the header fields)."
        responder.refusal(status: 414, detail: detail, request: nil).write(closingTo: socket)
        // Whatever the client sends next is not read: the connection closes
        // as soon as libmicrohttpd looks at it again.
        shutdown(socket, Int32(SHUT_WR))
        osv_set_connection_timeout(connection, 1)
    }

    func completed(connection: OpaquePointer?, contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        if let connection { requestDone(connection) }
        guard let slot = contextSlot, let raw = slot.pointee else { return }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
        slot.pointee = nil
        // Ended before its headers were in (refused by libmicrohttpd, or the
        // client left): never counted in flight.
        guard context.isStarted else { return }
        if let parked = context.parked, parked.isParked {
            // Completed while still parked (the daemon is closing): forget it.
            _ = lot.withLock { $0.remove(parked) }
        }
        context.stream?.ended()
        inFlight.subtract(1, ordering: .relaxed)
    }

    private func send(_ response: HTTPResponse, on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
        context.answered = true
        if logger.logLevel <= .debug {
            logger.debug("\(context.method) \(configuration.loggedPath(context.url)) \(response.status)")
        }
        if let stream = response.bodyStream {
            guard let made = stream.makeResponse(on: connection, daemon: self) else { return .NO }
            PreparedResponse.add(response.headers, to: made)
            defer { MHD_destroy_response(made) }
            return MHD_queue_response(connection, UInt32(response.status), made)
        }
        guard let prepared = response.prepared ?? PreparedResponse(response) else { return .NO }
        return withExtendedLifetime(prepared) { MHD_queue_response(connection, UInt32(response.status), prepared.raw) }
    }

    /// The header fields as received, and what they say about the
    /// request's framing, in one pass over libmicrohttpd's list (every
    /// header line it kept, in order, repeats included).
    private func headerFields(_ connection: OpaquePointer) -> RequestHead {
        var head = RequestHead()
        withUnsafeMutablePointer(to: &head) { head in
            _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectValue, UnsafeMutableRawPointer(head))
        }
        return head
    }
}

/// The daemon pointer, guarded by the daemon's mutex.
struct DaemonPointer: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Per-request state kept in libmicrohttpd's `con_cls` slot. libmicrohttpd
/// calls back for one connection on one thread at a time, so the fields are
/// never touched concurrently.
final class RequestContext: @unchecked Sendable {
    /// Known from the first call of the access handler, once the headers are in.
    private(set) var method = ""
    private(set) var url = ""
    private(set) var isStarted = false
    /// Whether the target, as `takeTarget` saw it, has a query.
    var targetHasQuery = false
    /// The query's parameters, once the headers are in (`readQuery`).
    var query: [String: String] = [:]
    var repeatedQuery: [String: [String]] = [:]
    /// Why a request is refused from its target alone (status and detail),
    /// answered once its headers are in.
    var refusal: (status: Int, detail: String)?
    /// The header fields, from the first call until the request is handed on.
    var fields: [HeaderField] = []
    var body: [UInt8] = []
    var answered = false
    var parked: ParkedConnection?
    /// The event stream this request answers with.
    var stream: EventStream?
    /// An HTTP/1.0 request (no chunked answers).
    var isHTTP10 = false

    init() {}

    /// A request whose headers are in, for a harness that answers requests
    /// without a daemon.
    convenience init(method: String, url: String) {
        self.init()
        start(method: method, url: url)
    }

    func start(method: String, url: String) {
        self.method = method
        self.url = url
        isStarted = true
    }
}

/// A request's header fields and framing as one pass collects them, in a
/// struct on the collecting thread's stack (reached through a pointer: no
/// allocation, and no exclusivity check per field).
struct RequestHead {
    var values: [HeaderField] = []
    var framing = osv_framing()

    init() { values.reserveCapacity(8) }
}

private func collectValue(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
                          _ value: UnsafePointer<CChar>?, _ valueSize: Int) -> MHD_Result
{
    guard let cls, let key else { return .YES }
    let head = cls.assumingMemoryBound(to: RequestHead.self)
    osv_check_field(&head.pointee.framing, key, keySize, value, valueSize)
    head.pointee.values.append(HeaderField(name: string(key, keySize), value: value.map { string($0, valueSize) } ?? ""))
    return .YES
}

/// A query's parameters as they are collected, up to one past `limit`.
struct QueryParameters {
    let limit: Int
    var values: [String: String] = [:]
    /// Every value of each name given more than once.
    var repeated: [String: [String]] = [:]
    var count = 0

    init(limit: Int) { self.limit = limit }
}

private func collectParameter(_ cls: UnsafeMutableRawPointer?, _ kind: MHD_ValueKind, _ key: UnsafePointer<CChar>?, _ keySize: Int,
                              _ value: UnsafePointer<CChar>?, _ valueSize: Int) -> MHD_Result
{
    guard let cls, let key else { return .YES }
    let query = cls.assumingMemoryBound(to: QueryParameters.self)
    query.pointee.count += 1
    guard query.pointee.count <= query.pointee.limit else { return .NO }
    let name = string(key, keySize), text = value.map { string($0, valueSize) } ?? ""
    if let earlier = query.pointee.values.updateValue(text, forKey: name) {
        query.pointee.repeated[name, default: [earlier]].append(text)
    }
    return .YES
}

/// `count` bytes at `bytes` as a string (libmicrohttpd gives the length:
/// no `strlen`).
private func string(_ bytes: UnsafePointer<CChar>, _ count: Int) -> String {
    bytes.withMemoryRebound(to: UInt8.self, capacity: count) { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) }
}

/// The request method, as a string literal for the usual ones (no copy).
private func methodName(_ method: UnsafePointer<CChar>) -> String {
    guard method[0] != 0 else { return "" }
    switch (method[0], method[1]) {
    case (0x47, 0x45) where strcmp(method, "GET") == 0: return "GET"
    case (0x50, 0x4F) where strcmp(method, "POST") == 0: return "POST"
    case (0x50, 0x41) where strcmp(method, "PATCH") == 0: return "PATCH"
    case (0x44, 0x45) where strcmp(method, "DELETE") == 0: return "DELETE"
    case (0x48, 0x45) where strcmp(method, "HEAD") == 0: return "HEAD"
    case (0x4F, 0x50) where strcmp(method, "OPTIONS") == 0: return "OPTIONS"
    case (0x50, 0x55) where strcmp(method, "PUT") == 0: return "PUT"
    default: return String(cString: method)
    }
}
