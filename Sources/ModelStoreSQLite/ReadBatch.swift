/// The entries of one row of `observer_read_batches`: reads folded from the
/// read journal, each an observer, the `seq` it read at and the number of
/// its set of keys (`read_shapes`). A batch starts with its format (one
/// byte); each entry is the `seq`, the set's number and the length of the
/// observer's id as unsigned LEB128 numbers, then the id's UTF-8 bytes.
/// A batch cut short or of another format ends where it can no longer be
/// read.
struct ReadBatch {
    static let format: UInt8 = 1
    private(set) var bytes: [UInt8] = [Self.format]
    private(set) var count = 0

    init(capacity: Int = 0) {
        bytes.reserveCapacity(1 + capacity * 48)
    }

    var isEmpty: Bool { count == 0 }

    mutating func append(observer: String, seq: Int64, shape: Int64) {
        Self.appendNumber(UInt64(bitPattern: seq), to: &bytes)
        Self.appendNumber(UInt64(bitPattern: shape), to: &bytes)
        var observer = observer
        observer.withUTF8 { id in
            Self.appendNumber(UInt64(id.count), to: &bytes)
            bytes.append(contentsOf: id)
        }
        count += 1
    }

    private static func appendNumber(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Calls `body` with each entry of `bytes` that can be read, in order.
    static func forEach(in bytes: [UInt8], _ body: (_ observer: String, _ seq: Int64, _ shape: Int64) throws -> Void) rethrows {
        guard bytes.first == format else { return }
        var position = 1
        func number() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while position < bytes.count, shift < 64 {
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        while position < bytes.count {
            guard let seq = number(), let shape = number(), let length = number(),
                  length <= UInt64(bytes.count - position)
            else { return }
            let end = position + Int(length)
            let observer = String(decoding: bytes[position..<end], as: UTF8.self)
            position = end
            try body(observer, Int64(bitPattern: seq), Int64(bitPattern: shape))
        }
    }
}
