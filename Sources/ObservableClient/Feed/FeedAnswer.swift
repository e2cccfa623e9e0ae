import JSON

/// One change of the feed, as the server sends it.
public struct FeedChange: Sendable {
    enum Operation: String, Sendable {
        case set, insert, remove, repair
    }

    let seq: Int64
    let path: String
    let operation: Operation
    let old: JSONValue?
    let new: JSONValue?
    /// The query read it is for (its canonical conditions and sort), if any.
    var query: String? = nil
}

/// What one poll answers, or one stream event carries: whole transactions,
/// and the cursor to go on from.
struct FeedAnswer: Sendable {
    let cursor: Int64
    let changes: [FeedChange]

    init(cursor: Int64, changes: [FeedChange]) {
        self.cursor = cursor
        self.changes = changes
    }

    /// Reads `{"cursor": N, "changes": [...]}`; nil when it is not that.
    init?(json: JSONValue) {
        guard let cursor = json["cursor"]?.intValue, let list = json["changes"]?.arrayValue else { return nil }
        var changes: [FeedChange] = []
        changes.reserveCapacity(list.count)
        for item in list {
            guard let seq = item["seq"]?.intValue, let path = item["path"]?.stringValue,
                  let op = item["op"]?.stringValue.flatMap(FeedChange.Operation.init(rawValue:))
            else { continue }  // an operation this client does not know: skipped, not fatal
            changes.append(FeedChange(seq: seq, path: path, operation: op, old: item["old"], new: item["new"],
                                      query: item["query"]?.stringValue))
        }
        self.cursor = cursor
        self.changes = changes
    }

    init?(bytes: [UInt8]) {
        guard let json = try? JSONParser.parse(bytes) else { return nil }
        self.init(json: json)
    }
}
