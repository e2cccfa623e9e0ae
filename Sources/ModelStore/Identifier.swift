/// Server-made ids: random (version 4) UUIDs in lower case, 122 random bits.
enum Identifier {
    /// A new id. `SystemRandomNumberGenerator` asks the kernel (getrandom)
    /// without opening a file, unlike `UUID()` here.
    static func make() -> String {
        // Two 64-bit draws: one `getrandom` each (a byte at a time was 16).
        var generator = SystemRandomNumberGenerator()
        let high = generator.next(), low = generator.next()
        var bytes = (0..<16).map { i in UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> (UInt64(i % 8) * 8)) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
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
