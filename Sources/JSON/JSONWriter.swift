/// Serialises JSON compactly, keys in the order they were set.
public enum JSONWriter {
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): writeInteger(i, into: &out)
        case .double(let d):
            if d.rounded() == d && abs(d) < 1e15 {
                out.append(contentsOf: String(Int64(d)).utf8)
            } else {
                out.append(contentsOf: "\(d)".utf8)
            }
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            var first = true
            for entry in object.entries {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(entry.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(entry.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Decimal digits, without making a `String`.
    public static func writeInteger(_ value: Int64, into out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[start...])
        }
    }

    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Runs that need no escaping are copied whole, found eight bytes
            // at a time.
            var start = 0
            var i = 0
            while i < bytes.count {
                if i + 8 <= bytes.count,
                   !mayNeedEscaping(UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self)) {
                    i += 8
                    continue
                }
                let byte = bytes[i]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
                    escape(byte, into: &out)
                    start = i + 1
                }
                i += 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Whether one of the eight bytes of `word` may be a control character,
    /// `"` or `\\`: false means none is (no false negatives; a byte at or
    /// above 0x80 may give a false positive, checked byte by byte).
    @inline(__always)
    private static func mayNeedEscaping(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        let below0x20 = (word &- ones &* 0x20) & ~word & highs != 0
        return below0x20 || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
    }

    private static func escape(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
        case 0x0A: out.append(contentsOf: "\\n".utf8)
        case 0x0D: out.append(contentsOf: "\\r".utf8)
        case 0x09: out.append(contentsOf: "\\t".utf8)
        default:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: "\\u00".utf8)
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
    }
}
