import ArgumentParser

/// A number of bytes, given as such or with a binary suffix: `512M`, `1G`,
/// `64KiB`.
struct ByteCount: LosslessStringConvertible, ExpressibleByArgument {
    let bytes: Int

    init(_ bytes: Int) {
        self.bytes = bytes
    }

    init?(_ text: String) {
        let units: [(suffix: String, shift: Int)] = [("KiB", 10), ("MiB", 20), ("GiB", 30), ("K", 10), ("M", 20), ("G", 30), ("", 0)]
        for unit in units where text.hasSuffix(unit.suffix) {
            guard let number = Int(text.dropLast(unit.suffix.count)), number >= 0 else { return nil }
            let (bytes, overflow) = number.multipliedReportingOverflow(by: 1 << unit.shift)
            guard !overflow else { return nil }
            self.bytes = bytes
            return
        }
        return nil
    }

    init?(argument: String) {
        self.init(argument)
    }

    var description: String { String(bytes) }
}
