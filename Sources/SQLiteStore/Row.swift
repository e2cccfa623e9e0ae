/// One result row, read by column index.
public struct Row: Sendable {
    public let values: [SQLValue]
    public subscript(index: Int) -> SQLValue { values[index] }
}
