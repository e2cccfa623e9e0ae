import Concurrency

/// Server-made ids: time-ordered (version 7) UUIDs in lower case: the
/// milliseconds since 1970 in the first 48 bits, then 74 random bits. New
/// rows' ids sort after the ones before, so an insert adds to the end of
/// its table's id index instead of a random page of it: a transaction of
/// many inserts dirties (and the log writes) a page or two of the index,
/// not one page an insert.
enum Identifier {
    static func make() -> String {
        // `SystemRandomNumberGenerator` asks the kernel (getrandom) without
        // opening a file, unlike `UUID()` here: two 64-bit draws.
        var generator = SystemRandomNumberGenerator()
        let high = generator.next(), low = generator.next()
        let milliseconds = UInt64(ServerClock.wallSeconds * 1000)
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: milliseconds >> (UInt64(5 - i) * 8)) }
        bytes[6] = UInt8(truncatingIfNeeded: high)
        bytes[7] = UInt8(truncatingIfNeeded: high >> 8)
        for i in 8..<16 { bytes[i] = UInt8(truncatingIfNeeded: low >> (UInt64(i - 8) * 8)) }
        bytes[6] = (bytes[6] & 0x0F) | 0x70
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return text(of: bytes)
    }

    /// A random (version 4) UUID: 122 random bits from `getrandom`, nothing
    /// else. An observer's id is all it takes to use it (a capability), so
    /// it carries no time and is as hard to guess as such an id can be.
    static func makeRandom() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next(), low = generator.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: high >> (UInt64(i) * 8)) }
        for i in 8..<16 { bytes[i] = UInt8(truncatingIfNeeded: low >> (UInt64(i - 8) * 8)) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return text(of: bytes)
    }

    /// `bytes` (16) as a UUID in lower case.
    private static func text(of bytes: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
