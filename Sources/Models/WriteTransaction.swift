import JSON
import ModelObservation
import SQLiteStore

/// One write in progress: a copy of the state to change, the SQL connection
/// inside `BEGIN IMMEDIATE`, and the changes recorded so far.
public struct WriteTransaction: ~Copyable {
    public internal(set) var state: ModelState
    let database: Database
    private(set) var pending: [PendingChange] = []

    init(state: ModelState, database: Database) {
        self.state = state
        self.database = database
    }

    func execute(_ sql: String, _ values: [SQLValue]) throws {
        try database.execute(sql, values)
    }

    /// Records that property `path` went from `old` to `new`; a write that
    /// leaves the value as it was records nothing.
    mutating func set(_ path: String, old: JSONValue, new: JSONValue) {
        guard old != new else { return }
        pending.append(.set(path, old: JSONWriter.string(old), new: JSONWriter.string(new)))
    }

    mutating func insert(into collection: String, element: Representation) {
        pending.append(.insert(element, into: collection))
    }

    mutating func remove(from collection: String, element: Representation) {
        pending.append(.remove(from: collection, element: JSONWriter.string(element.json), elementKeys: element.reads))
    }

    mutating func appendPending(_ change: PendingChange) {
        pending.append(change)
    }

    mutating func takePosition() -> Int64 {
        defer { state.nextPosition += 1 }
        return state.nextPosition
    }

    /// Checks `If-Match` against the current representation.
    func require(ifMatch: String?, current: Representation) throws(ModelError) {
        guard let ifMatch else { return }
        let tags = ifMatch.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tags.contains("*") { return }
        let etag = current.etag
        // If-Match compares strongly (RFC 9110): weak tags never match.
        guard tags.contains(etag) else {
            throw ModelError(.preconditionFailed, "If-Match \(ifMatch) does not match the current version \(etag)")
        }
    }
}

extension Substring {
    func trimmingCharacters(in set: Whitespace) -> String {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}

enum Whitespace { case whitespaces }

extension PendingChange {
    /// The insertion of `element` into `collection`.
    static func insert(_ element: Representation, into collection: String) -> PendingChange {
        .insert(into: collection, element: JSONWriter.string(element.json), elementKeys: element.reads)
    }
}
