/// A value bound to or read from a statement.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var int64: Int64? {
        if case .integer(let v) = self { return v }
        return nil
    }

    public var string: String? {
        if case .text(let v) = self { return v }
        return nil
    }

    public var bytes: [UInt8]? {
        if case .blob(let v) = self { return v }
        return nil
    }

    public var double: Double? {
        switch self {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        default: return nil
        }
    }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension Optional where Wrapped == String {
    /// The text, or NULL.
    public var sqlValue: SQLValue { map(SQLValue.text) ?? .null }
}
