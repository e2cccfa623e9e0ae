import JSON

/// A value a query compares a field with: a text, an integer, a number or
/// a boolean, as the field's type is (docs/API.md, "Queries").
public enum QueryValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    case text(String)
    case integer(Int)
    case number(Double)
    case boolean(Bool)

    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }

    var json: JSONValue {
        switch self {
        case .text(let text): .string(text)
        case .integer(let integer): .int(Int64(integer))
        case .number(let number): .double(number)
        case .boolean(let boolean): .bool(boolean)
        }
    }

    /// As the server writes it in a query's canonical form: a text as it
    /// is, a number as JSON writes it.
    var text: String { QueryText.plain(json) }

    /// An item of `in.(…)`, quoted where it holds what would split it.
    var listItem: String { QueryText.listItem(json) }
}

/// One condition of a query read, on a field the model declares queryable:
/// `.equal("donutId", donut.id)`, `.atLeast("quantity", 3)`, `.isNull("topping")`.
public struct QueryCondition: Sendable, Hashable {
    /// The field compared.
    public let field: String
    /// What follows `field=` in the query: `eq.…`, `gte.3`, `in.(a,b)`, `is.null`.
    public let expression: String

    init(_ field: String, _ expression: String) {
        self.field = field
        self.expression = expression
    }

    public static func equal(_ field: String, _ value: QueryValue) -> Self { Self(field, "eq." + value.text) }
    public static func notEqual(_ field: String, _ value: QueryValue) -> Self { Self(field, "neq." + value.text) }
    public static func lessThan(_ field: String, _ value: QueryValue) -> Self { Self(field, "lt." + value.text) }
    public static func atMost(_ field: String, _ value: QueryValue) -> Self { Self(field, "lte." + value.text) }
    public static func greaterThan(_ field: String, _ value: QueryValue) -> Self { Self(field, "gt." + value.text) }
    public static func atLeast(_ field: String, _ value: QueryValue) -> Self { Self(field, "gte." + value.text) }
    public static func oneOf(_ field: String, _ values: [QueryValue]) -> Self {
        Self(field, "in.(" + values.map(\.listItem).joined(separator: ",") + ")")
    }
    public static func isNull(_ field: String) -> Self { Self(field, "is.null") }
    public static func isNotNull(_ field: String) -> Self { Self(field, "not.is.null") }
}

/// The order of a query read: by a queryable field, ascending or descending.
public struct QuerySort: Sendable, Hashable {
    public let field: String
    public let descending: Bool

    public static func ascending(_ field: String) -> Self { Self(field: field, descending: false) }
    public static func descending(_ field: String) -> Self { Self(field: field, descending: true) }
}

/// A query's conditions and sort, as the server names it in the changes
/// its reader hears (`query`): the conditions by field name, in the order
/// given for one field, then the sort.
struct QueryKey: Hashable {
    let conditions: [QueryCondition]
    let sort: QuerySort?

    init(conditions: [QueryCondition], sort: QuerySort?) {
        // Stable: one field's conditions keep their order.
        self.conditions = conditions.enumerated()
            .sorted { ($0.element.field, $0.offset) < ($1.element.field, $1.offset) }
            .map(\.element)
        self.sort = sort
    }

    /// The canonical form, as the feed's `query` says it.
    var text: String {
        var parts = conditions.map { $0.field + "=" + $0.expression }
        if let sort { parts.append("sort=" + (sort.descending ? "-" : "") + sort.field) }
        return parts.joined(separator: "&")
    }

    /// The same, each value escaped for a URL.
    var urlQuery: String {
        var parts = conditions.map { $0.field + "=" + Self.escaped($0.expression) }
        if let sort { parts.append("sort=" + (sort.descending ? "-" : "") + sort.field) }
        return parts.joined(separator: "&")
    }

    /// `text` with every byte but letters, digits and `-._~(),` escaped.
    static func escaped(_ text: String) -> String { QueryText.percentEncoded(text) }
}
