import JSON

/// The conditions and sort of a query read (SPEC §3d), and the window of
/// sort keys it showed: what makes a `Shape` a query's.
///
/// An element is in a query's copy when every condition holds for its
/// values and its sort key lies in the window. The sort key is the sorted
/// field's value and the element's position (ties broken by position);
/// without a sort, the position alone. The order shown is the keys'
/// ascending order, or its exact reverse (`descending`); `lower` is the
/// first key of the window in that order and `upper` the last, each nil
/// where the window is open (the read started at the beginning, or no
/// more followed).
public struct ShapeQuery: Hashable, Sendable {
    public func hash(into hasher: inout Hasher) {
        hasher.combine(typedText)
    }

    public var conditions: [Condition]
    /// The field sorted by; nil for creation order.
    public var sort: String?
    public var descending: Bool
    public var lower: Bound?
    public var upper: Bound?

    public init(conditions: [Condition], sort: String?, descending: Bool, lower: Bound? = nil, upper: Bound? = nil) {
        self.conditions = conditions
        self.sort = sort
        self.descending = descending
        self.lower = lower
        self.upper = upper
    }

    /// One end of a window: a sort key, and whether it is in the window
    /// (a read's first and last element are; a cursor's element is not).
    public struct Bound: Equatable, Sendable {
        public var key: SortKey
        public var inclusive: Bool

        public init(key: SortKey, inclusive: Bool) {
            self.key = key
            self.inclusive = inclusive
        }
    }

    /// One condition on a field: `quantity=gte.3`.
    public struct Condition: Equatable, Sendable {
        public enum Operator: String, Sendable, CaseIterable {
            case eq, neq, lt, lte, gt, gte, `in`
            case isNull = "is.null"
            case notNull = "not.is.null"
        }

        public let field: String
        public let op: Operator
        /// The values compared with: one, several for `in`, none for the null tests.
        public let values: [JSONValue]

        public init(field: String, op: Operator, values: [JSONValue]) {
            self.field = field
            self.op = op
            self.values = values
        }

        /// Whether `value` (null when the element has none) meets it.
        /// Null meets only `is.null`, as in SQL.
        public func holds(for value: JSONValue) -> Bool {
            switch op {
            case .isNull: return value == .null
            case .notNull: return value != .null
            default: break
            }
            guard value != .null else { return false }
            switch op {
            case .eq: return SortKey.compare(value, values[0]) == 0
            case .neq: return SortKey.compare(value, values[0]) != 0
            case .lt: return SortKey.compare(value, values[0]) < 0
            case .lte: return SortKey.compare(value, values[0]) <= 0
            case .gt: return SortKey.compare(value, values[0]) > 0
            case .gte: return SortKey.compare(value, values[0]) >= 0
            case .in: return values.contains { SortKey.compare(value, $0) == 0 }
            case .isNull, .notNull: return false
            }
        }

        /// `quantity=gte.3`, `glaze=in.(sugar,"a,b")`, `topping=is.null`.
        public var text: String {
            let prefix = field + "=" + op.rawValue
            switch op {
            case .isNull, .notNull: return prefix
            case .in: return prefix + ".(" + values.map { Self.listItem($0) }.joined(separator: ",") + ")"
            default: return prefix + "." + Self.plain(values[0])
            }
        }

        static func plain(_ value: JSONValue) -> String { QueryText.plain(value) }

        /// An item of an `in` list, quoted where it holds what would split it.
        static func listItem(_ value: JSONValue) -> String { QueryText.listItem(value) }
    }

    /// The conditions and sort as a query string says them (`donutId=eq.x&sort=-quantity`):
    /// what the changes its reader hears carry as `query`.
    public var text: String {
        var parts = conditions.map(\.text)
        if let sort { parts.append("sort=" + (descending ? "-" : "") + sort) } else if descending { parts.append("order=desc") }
        return parts.joined(separator: "&")
    }

    /// The sort key of an element with `values` at `position`.
    public func key(of values: JSONObject, at position: Int64) -> SortKey {
        SortKey(value: sort.map { values[$0] ?? .null }, position: position)
    }

    /// Whether `a` comes before `b` in the order shown.
    public func precedes(_ a: SortKey, _ b: SortKey) -> Bool {
        descending ? b < a : a < b
    }

    /// Whether every condition holds for `values`.
    public func matches(_ values: JSONObject) -> Bool {
        conditions.allSatisfy { $0.holds(for: values[$0.field] ?? .null) }
    }

    /// A numeric field and the range of its values (`SortKey.ordinal`)
    /// outside which no element is in the copy: where a write finds it
    /// among the shapes of its collection. From its comparisons on one
    /// field, or its window's bounds on its sort field; nil when neither
    /// bounds anything, or a bound is no number.
    var range: (field: String, from: Int64, through: Int64)? {
        var best: (field: String, from: Int64, through: Int64)?
        func narrow(_ field: String, from: Int64, through: Int64) {
            if let current = best, current.field == field {
                best = (field, max(current.from, from), min(current.through, through))
            } else if best == nil {
                best = (field, from, through)
            }
        }
        for condition in conditions {
            guard let value = condition.values.first.flatMap(SortKey.ordinal) else { continue }
            switch condition.op {
            case .lt, .lte: narrow(condition.field, from: .min, through: value)
            case .gt, .gte: narrow(condition.field, from: value, through: .max)
            default: continue
            }
        }
        if best == nil, let sort {
            // The window's ends, in values; an open end bounds nothing. Only
            // a number field's: at least one end a number, none another kind.
            let ends = [lower, upper].compactMap { $0?.key.value }
            func isNumber(_ value: JSONValue) -> Bool {
                switch value {
                case .int, .double: true
                default: false
                }
            }
            guard ends.contains(where: isNumber), ends.allSatisfy({ $0 == .null || isNumber($0) }) else { return nil }
            let first = lower.flatMap { $0.key.value.flatMap(SortKey.ordinal) }
            let last = upper.flatMap { $0.key.value.flatMap(SortKey.ordinal) }
            guard lower == nil || first != nil, upper == nil || last != nil, first != nil || last != nil else { return nil }
            let low = descending ? last : first, high = descending ? first : last
            narrow(sort, from: low ?? .min, through: high ?? .max)
        }
        return best
    }

    /// Whether `key` lies in the window.
    public func windowHolds(_ key: SortKey) -> Bool {
        if let lower {
            if precedes(key, lower.key) || (!lower.inclusive && key == lower.key) { return false }
        }
        if let upper {
            if precedes(upper.key, key) || (!upper.inclusive && key == upper.key) { return false }
        }
        return true
    }

    /// Whether an element with `values` at `position` is in the copy.
    public func holds(_ values: JSONObject, at position: Int64) -> Bool {
        matches(values) && windowHolds(key(of: values, at: position))
    }

    // MARK: - Kept among an observer's reads

    /// The parts of a shape's key it adds: `q=…&lo=…&hi=…`, each escaped
    /// so that no key holds `&`, `%` or a line break of its own.
    var keyParts: String {
        var text = "q=" + Self.escape(typedText)
        if let lower { text += (lower.inclusive ? "&lo=" : "&lox=") + Self.escape(lower.key.text) }
        if let upper { text += (upper.inclusive ? "&hi=" : "&hix=") + Self.escape(upper.key.text) }
        return text
    }

    /// Parses what `keyParts` wrote back (`q`, `lo`/`lox`, `hi`/`hix`,
    /// already split); nil when any is malformed.
    init?(parts: [(name: Substring, value: Substring)]) {
        var query: ShapeQuery?
        var lower: Bound?, upper: Bound?
        for (name, value) in parts {
            let text = Self.unescape(value)
            switch name {
            case "q":
                guard let parsed = ShapeQuery.parse(typed: text) else { return nil }
                query = parsed
            case "lo", "lox":
                guard let key = SortKey(text: text) else { return nil }
                lower = Bound(key: key, inclusive: name == "lo")
            case "hi", "hix":
                guard let key = SortKey(text: text) else { return nil }
                upper = Bound(key: key, inclusive: name == "hi")
            default: return nil
            }
        }
        guard var query else { return nil }
        query.lower = lower
        query.upper = upper
        self = query
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": out += "%25"
            case "&": out += "%26"
            case "\n": out += "%0A"
            case "\r": out += "%0D"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func unescape(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        var out = ""
        var rest = text[...]
        while let mark = rest.firstIndex(of: "%") {
            out += rest[..<mark]
            let code = rest[mark...].prefix(3)
            switch code {
            case "%0D": out += "\r"
            case "%0A": out += "\n"
            case "%26": out += "&"
            case "%25": out += "%"
            default: out += code
            }
            rest = rest[code.endIndex...]
        }
        return out + rest
    }

    /// The conditions and sort with each condition's values as a JSON
    /// array (`quantity=gte.[3]`): how a shape's key keeps them, types and all.
    var typedText: String {
        var parts = conditions.map { $0.field + "=" + $0.op.rawValue + ($0.values.isEmpty ? "" : "." + JSONWriter.string(.array($0.values))) }
        if let sort { parts.append("sort=" + (descending ? "-" : "") + sort) } else if descending { parts.append("order=desc") }
        // A line break is in no JSON text: parts are split at it again.
        return parts.joined(separator: "\n")
    }

    /// Parses what `typedText` wrote; nil when it is malformed.
    static func parse(typed text: String) -> ShapeQuery? {
        var conditions: [Condition] = []
        var sort: String?
        var descending = false
        for part in text.split(separator: "\n") {
            guard let equals = part.firstIndex(of: "=") else { return nil }
            let name = String(part[..<equals]), value = part[part.index(after: equals)...]
            if name == "sort" {
                descending = value.hasPrefix("-")
                sort = descending ? String(value.dropFirst()) : String(value)
            } else if name == "order" {
                descending = value == "desc"
            } else if let op = Condition.Operator(rawValue: String(value)), op == .isNull || op == .notNull {
                conditions.append(Condition(field: name, op: op, values: []))
            } else {
                guard let dot = value.firstIndex(of: "."), let op = Condition.Operator(rawValue: String(value[..<dot])),
                      case .array(let values)? = try? JSONParser.parse(String(value[value.index(after: dot)...])), !values.isEmpty
                else { return nil }
                conditions.append(Condition(field: name, op: op, values: values))
            }
        }
        return ShapeQuery(conditions: conditions, sort: sort, descending: descending)
    }
}

/// A query that cannot be read, naming the field at fault.
public struct QueryError: Error, Sendable {
    public let field: String
    public let message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }
}

extension ShapeQuery.Condition {
    /// Parses `op.value` for `field`; `value` makes a value of the text
    /// after the operator (throwing when it is of the wrong type).
    public static func parse(field: String, _ expression: String, value: (String) throws(QueryError) -> JSONValue) throws(QueryError)
        -> ShapeQuery.Condition
    {
        if expression == "is.null" { return .init(field: field, op: .isNull, values: []) }
        if expression == "not.is.null" { return .init(field: field, op: .notNull, values: []) }
        guard let dot = expression.firstIndex(of: ".") else {
            throw QueryError(field: field, "\(field)=\(expression) is not op.value (eq, neq, lt, lte, gt, gte, in.(…), is.null, not.is.null)")
        }
        let name = String(expression[..<dot]), rest = String(expression[expression.index(after: dot)...])
        if name == "is" || name == "not" {
            throw QueryError(field: field, "\(field)=\(expression): only is.null and not.is.null test for null")
        }
        guard let op = Operator(rawValue: name), op != .isNull, op != .notNull else {
            throw QueryError(field: field, "\(field) has an unknown operator \"\(name)\" (eq, neq, lt, lte, gt, gte, in, is.null, not.is.null)")
        }
        guard op == .in else { return .init(field: field, op: op, values: [try value(rest)]) }
        guard rest.hasPrefix("("), rest.hasSuffix(")"), rest.count >= 2 else {
            throw QueryError(field: field, "\(field)=in. takes a list in parentheses: in.(a,b)")
        }
        var items: [JSONValue] = []
        for item in try listItems(String(rest.dropFirst().dropLast()), field: field) { items.append(try value(item)) }
        return .init(field: field, op: .in, values: items)
    }

    /// The items of `a,"b,c",d`: quoted ones may hold `,` `(` `)` and
    /// `\"` `\\` escapes.
    static func listItems(_ text: String, field: String) throws(QueryError) -> [String] {
        var items: [String] = []
        var current = ""
        var quoted = false, wasQuoted = false, escaping = false
        for character in text {
            if quoted {
                if escaping {
                    current.append(character)
                    escaping = false
                } else if character == "\\" {
                    escaping = true
                } else if character == "\"" {
                    quoted = false
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case ",":
                items.append(current)
                current = ""
                wasQuoted = false
            case "\"":
                guard current.isEmpty, !wasQuoted else { throw QueryError(field: field, "\(field)=in.(…) has a stray quote") }
                quoted = true
                wasQuoted = true
            case "(", ")":
                throw QueryError(field: field, "\(field)=in.(…) holds a parenthesis outside quotes")
            default:
                guard !wasQuoted else { throw QueryError(field: field, "\(field)=in.(…) has text after a quoted item") }
                current.append(character)
            }
        }
        guard !quoted else { throw QueryError(field: field, "\(field)=in.(…) has an unclosed quote") }
        items.append(current)
        return items
    }
}

/// Where an element stands in a query's order: its sorted field's value
/// (nil without a sort) and its position, which breaks ties.
public struct SortKey: Equatable, Sendable, Comparable {
    public var value: JSONValue?
    public var position: Int64

    public init(value: JSONValue?, position: Int64) {
        self.value = value
        self.position = position
    }

    public static func < (a: SortKey, b: SortKey) -> Bool {
        let order = compare(a.value ?? .null, b.value ?? .null)
        return order != 0 ? order < 0 : a.position < b.position
    }

    public static func == (a: SortKey, b: SortKey) -> Bool {
        compare(a.value ?? .null, b.value ?? .null) == 0 && a.position == b.position
    }

    /// -1, 0 or 1: numbers by value, text by code points, false before
    /// true, null after every value.
    public static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return 1
        case (_, .null): return -1
        case (.int(let x), .int(let y)): return x < y ? -1 : x == y ? 0 : 1
        case (.int(let x), .double(let y)): return compareDoubles(Double(x), y)
        case (.double(let x), .int(let y)): return compareDoubles(x, Double(y))
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.string(let x), .string(let y)):
            return x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars) ? -1 : x == y ? 0 : 1
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        default: return rank(a) < rank(b) ? -1 : rank(a) == rank(b) ? 0 : 1
        }
    }

    private static func compareDoubles(_ x: Double, _ y: Double) -> Int { x < y ? -1 : x == y ? 0 : 1 }

    private static func rank(_ value: JSONValue) -> Int {
        switch value {
        case .bool: 0
        case .int, .double: 1
        case .string: 2
        case .array: 3
        case .object: 4
        case .null: 5
        }
    }

    /// A number as an `Int64` in the same order (a `Double`'s bits made
    /// to sort as integers do), null as the greatest (nulls sort last),
    /// for indexing ranges; nil for any other value.
    public static func ordinal(_ value: JSONValue) -> Int64? {
        switch value {
        case .null:
            return .max
        case .int(let number):
            return ordinal(Double(number))
        case .double(let number):
            return ordinal(number)
        default:
            return nil
        }
    }

    private static func ordinal(_ number: Double) -> Int64? {
        guard !number.isNaN else { return nil }
        let bits = (number == 0 ? 0.0 : number).bitPattern
        let ordered = bits >> 63 == 1 ? ~bits : bits | (1 << 63)
        return Int64(bitPattern: ordered ^ (1 << 63))
    }

    /// `12` or `12:<value as JSON>`: kept in a shape's key and a page's cursor.
    public var text: String {
        String(position) + (value.map { ":" + JSONWriter.string($0) } ?? "")
    }

    public init?(text: String) {
        let colon = text.firstIndex(of: ":")
        guard let position = Int64(text[..<(colon ?? text.endIndex)]) else { return nil }
        self.position = position
        if let colon {
            guard let value = try? JSONParser.parse(String(text[text.index(after: colon)...])), value.isScalar else { return nil }
            self.value = value
        } else {
            value = nil
        }
    }
}

extension JSONValue {
    /// Whether it is neither an array nor an object.
    public var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }
}

extension ShapeQuery {
    /// The conditions and sort as a URL's query says them, each value escaped.
    public var urlQuery: String {
        var parts: [String] = []
        for condition in conditions {
            let text = condition.text
            let equals = text.firstIndex(of: "=")!
            parts.append(String(text[...equals]) + Self.percentEncoded(String(text[text.index(after: equals)...])))
        }
        if let sort { parts.append("sort=" + (descending ? "-" : "") + sort) } else if descending { parts.append("order=desc") }
        return parts.joined(separator: "&")
    }

    /// `text` with every byte but letters, digits and `-._~(),` escaped.
    static func percentEncoded(_ text: String) -> String { QueryText.percentEncoded(text) }
}
