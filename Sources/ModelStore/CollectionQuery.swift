import JSON
import ModelObservation

/// A query read of a collection (SPEC §3d): conditions on queryable
/// fields, a sort, and the page of its order asked for.
public struct CollectionQuery: Sendable {
    /// The conditions and sort (its window is set by the read).
    public var query: ShapeQuery
    /// At most this many elements; all when nil.
    public var limit: Int?
    /// Start just past this key (a cursor of the query's order).
    public var after: SortKey?

    public init(query: ShapeQuery, limit: Int? = nil, after: SortKey? = nil) {
        self.query = query
        self.limit = limit
        self.after = after
    }
}

/// The cursor of a sorted page, as `after` carries it: the last shown
/// element's sort key, base64url text so that it needs no escaping in a
/// URL. Opaque to clients.
public enum QueryCursor {
    public static func text(_ key: SortKey) -> String {
        Base64URL.encode(Array(key.text.utf8))
    }

    public static func key(_ text: String) -> SortKey? {
        guard let bytes = Base64URL.decode(text) else { return nil }
        return SortKey(text: String(decoding: bytes, as: UTF8.self))
    }
}

enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * UInt32(offset)) }
            for offset in 0..<(chunk.count + 1) { out.append(alphabet[Int((value >> (18 - 6 * UInt32(offset))) & 63)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt32] = []
        for byte in text.utf8 {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            values.append(UInt32(value))
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            var value: UInt32 = 0
            for (offset, sextet) in chunk.enumerated() { value |= sextet << (18 - 6 * UInt32(offset)) }
            for offset in 0..<(chunk.count - 1) { out.append(UInt8((value >> (16 - 8 * UInt32(offset))) & 255)) }
            index += 4
        }
        return out
    }
}

extension Resource {
    /// The queryable field called `name`.
    public func queryableField(_ name: String) -> QueryableField? {
        queryable.first { $0.name == name }
    }

    /// Whether every condition of `query` holds for `record`.
    func matches(_ record: Record, _ query: ShapeQuery, in state: ModelState, fields: [QueryableField?]) -> Bool {
        for (condition, field) in zip(query.conditions, fields) {
            guard let field, condition.holds(for: field.value(of: record, in: state)) else { return false }
        }
        return true
    }

    /// `{"orders": [...]}` as a query read shows it: the elements that
    /// match, in the query's order, past its cursor, at most its limit,
    /// read as one query shape whose window runs from the start (or the
    /// cursor) to the last element shown, open at the end when no more
    /// follow; the next page while more do.
    public func list(in state: ModelState, _ selection: FieldSelection = .all, query read: CollectionQuery,
                     output: RepresentationOutput? = nil) -> Representation {
        var query = read.query
        query.lower = read.after.map { ShapeQuery.Bound(key: $0, inclusive: false) }
        var shown = queryElements(in: state, query, limit: read.limit)
        let more = read.limit.map { shown.count > $0 } ?? false
        if more, let limit = read.limit { shown.removeLast(shown.count - limit) }
        if more, let last = shown.last { query.upper = ShapeQuery.Bound(key: last.key, inclusive: true) }
        var builder = RepresentationBuilder(resource: path, fields: 4, output: output)
        let shape = Shape(collection: path, fields: selection.shapeFields, query: query)
        builder.elements(MemberName(name), shape: shape, .all) { builder in
            for (_, record) in shown {
                builder.object(resource: record.path) { write(record, in: state, into: &$0, selection) }
            }
        }
        if more, let last = shown.last {
            var next = NextPage(collection: path, page: Page(limit: read.limit, after: last.record.position, descending: query.descending),
                                fields: selection.shapeFields, member: nil)
            next.query = read.query.urlQuery
            if query.sort != nil { next.cursor = QueryCursor.text(last.key) }
            builder.nextPages.append(next)
        }
        return builder.finish()
    }
}
