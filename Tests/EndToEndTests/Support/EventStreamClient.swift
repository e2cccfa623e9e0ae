import Foundation
import TestSupport

/// A Server-Sent Events client of the tests' own: it opens the change feed
/// with `Accept: text/event-stream`, undoes the chunked encoding and parses
/// events (`id`, `event`, `data`, `retry`) and comment lines as they come.
final class EventStreamClient {
    struct Event {
        var id: String?
        var event = "message"
        var data = ""
        var retry: Int?
        var json: JSONValue { (try? JSONValue(parsing: Array(data.utf8))) ?? .null }
    }

    let connection: RawConnection
    let head: RawResponse
    private var chunked: [UInt8] = []
    private var text = ""
    private(set) var comments = 0
    private(set) var ended = false

    /// Opens the feed of `observer` at `query` (say `since=3`), sending
    /// `lastEventID` when given.
    /// With `namedInHeader`, the observer goes in the `Observer` header of
    /// `GET /observer/changes` rather than in the path.
    init(port: UInt16, observer: String, query: String = "", lastEventID: String? = nil, headers: [String: String] = [:],
         receiveTimeout: Double = 10, receiveBuffer: Int32? = nil, source: String? = nil, namedInHeader: Bool = false) throws
    {
        connection = try RawConnection(port: port, receiveTimeout: receiveTimeout, receiveBuffer: receiveBuffer, source: source)
        let path = namedInHeader ? "/observer/changes" : "/observers/\(observer)/changes"
        var request = "GET \(path)\(query.isEmpty ? "" : "?" + query) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if namedInHeader { request += "Observer: \(observer)\r\n" }
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try connection.send(request + "\r\n")
        head = try connection.receiveHead()
    }

    /// The stream on `connection`, whose request was sent already.
    init(sentOn connection: RawConnection) throws {
        self.connection = connection
        head = try connection.receiveHead()
    }

    /// The next event, or nil when the stream ended first; comments are
    /// counted on the way. Throws when nothing comes within the timeout.
    func next() throws -> Event? {
        while true {
            if let event = takeEvent() { return event }
            if ended { return nil }
            try receiveMore()
        }
    }

    /// Takes what arrived (waiting for some), and notes the end of the stream.
    private func receiveMore() throws {
        do {
            chunked += try connection.receiveBytes()
        } catch TestHTTPError.io(let message) where message == "connection closed" {
            ended = true
        }
        dechunk()
    }

    /// Waits until a comment line arrives (a heartbeat); false if an event
    /// or the end comes first.
    func nextComment() throws -> Bool {
        let before = comments
        while comments == before {
            if !text.isEmpty, !text.hasPrefix(":") { return false }
            if ended { return false }
            try receiveMore()
            takeComments()
        }
        return true
    }

    /// The `new` values of the changes of the events that come, until there
    /// are `count` of them or the stream ends.
    func newValues(count: Int) throws -> [Int64] {
        var values: [Int64] = []
        while values.count < count, let event = try next() {
            values += event.json.changeList.compactMap { $0["new"]?.intValue }
        }
        return values
    }

    /// Every event until the stream ends.
    func rest() throws -> [Event] {
        var events: [Event] = []
        while let event = try next() { events.append(event) }
        return events
    }

    private func dechunk() {
        while let lineEnd = find("\r\n", in: chunked) {
            guard let size = Int(String(decoding: chunked[..<lineEnd], as: UTF8.self), radix: 16) else { return }
            if size == 0 {
                ended = true
                chunked.removeAll()
                return
            }
            guard chunked.count >= lineEnd + 2 + size + 2 else { return }
            text += String(decoding: chunked[(lineEnd + 2)..<(lineEnd + 2 + size)], as: UTF8.self)
            chunked.removeFirst(lineEnd + 2 + size + 2)
        }
    }

    private func find(_ needle: String, in bytes: [UInt8]) -> Int? {
        let pattern = Array(needle.utf8)
        guard bytes.count >= pattern.count else { return nil }
        return (0...(bytes.count - pattern.count)).first { start in pattern.indices.allSatisfy { bytes[start + $0] == pattern[$0] } }
    }

    @discardableResult
    private func takeComments() -> Int {
        var taken = 0
        while text.hasPrefix(":"), let end = text.range(of: "\n\n") {
            text.removeSubrange(text.startIndex..<end.upperBound)
            comments += 1
            taken += 1
        }
        return taken
    }

    private func takeEvent() -> Event? {
        takeComments()
        guard let end = text.range(of: "\n\n") else { return nil }
        let block = text[text.startIndex..<end.lowerBound]
        text.removeSubrange(text.startIndex..<end.upperBound)
        var event = Event()
        var lines: [String] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") { continue }
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let field = String(parts[0])
            var value = parts.count > 1 ? String(parts[1]) : ""
            if value.hasPrefix(" ") { value.removeFirst() }
            switch field {
            case "id": event.id = value
            case "event": event.event = value
            case "data": lines.append(value)
            case "retry": event.retry = Int(value)
            default: break
            }
        }
        event.data = lines.joined(separator: "\n")
        return event
    }
}
