/// Writes a JSON object member by member into a buffer the caller owns,
/// keys in the order written: for answers made often (a poll's changes, a
/// problem), without building a `JSONValue` first.
///
///     var object = JSONObjectWriting(into: &out)
///     object.member("cursor", 42, into: &out)
///     object.end(into: &out)
public struct JSONObjectWriting {
    private var isFirst = true

    /// Begins the object (`{`).
    public init(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
    }

    /// Writes `key` and its colon; the value is written next, by the caller.
    public mutating func key(_ key: String, into out: inout [UInt8]) {
        if !isFirst { out.append(UInt8(ascii: ",")) }
        isFirst = false
        JSONWriter.writeString(key, into: &out)
        out.append(UInt8(ascii: ":"))
    }

    public mutating func member(_ key: String, _ value: Int64, into out: inout [UInt8]) {
        self.key(key, into: &out)
        JSONWriter.writeInteger(value, into: &out)
    }

    public mutating func member(_ key: String, _ value: String, into out: inout [UInt8]) {
        self.key(key, into: &out)
        JSONWriter.writeString(value, into: &out)
    }

    /// A member whose value is JSON text already (a stored value), written
    /// as it is; nil is `null`.
    public mutating func member(_ key: String, json: String?, into out: inout [UInt8]) {
        self.key(key, into: &out)
        out.append(contentsOf: (json ?? "null").utf8)
    }

    /// A member whose value is an array of `elements`, each written by `write`.
    public mutating func member<Elements: Sequence>(_ key: String, elements: Elements, into out: inout [UInt8],
                                                    _ write: (Elements.Element, inout [UInt8]) -> Void)
    {
        self.key(key, into: &out)
        out.append(UInt8(ascii: "["))
        var isFirstElement = true
        for element in elements {
            if !isFirstElement { out.append(UInt8(ascii: ",")) }
            isFirstElement = false
            write(element, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Ends the object (`}`).
    public func end(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "}"))
    }
}
