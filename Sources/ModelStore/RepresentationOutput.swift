/// Where a large representation's body goes while it is written: the
/// builder hands its bytes over a piece at a time (at element boundaries,
/// `piece` bytes or more), so that a body never has to be whole in memory.
///
/// A read is written twice when it is large. The first time (`measuring`)
/// the body is kept only while it stays under `keepLimit`; past it, only
/// its length and its digest are (what the answer's head needs: the
/// `Content-Length` and the `ETag`). The second time (`sending`) each piece
/// goes to `send` as it is made, from the same snapshot, so the bytes are
/// the same.
public final class RepresentationOutput {
    /// The body, while the whole of it is kept.
    public private(set) var kept: [UInt8]?
    /// Bytes written so far.
    public private(set) var length = 0
    /// The FNV-1a digest of the bytes so far (the `ETag`'s).
    public private(set) var digest = BodyDigest()
    /// False once `send` refused a piece (the client left): the writing may stop.
    public private(set) var isOpen = true
    private let keepLimit: Int
    private let send: (([UInt8]) -> Bool)?

    /// The size of a piece handed over.
    public static let piece = 64 * 1024

    /// A first writing: the body kept up to `keepLimit` bytes, measured past it.
    public static func measuring(keepLimit: Int) -> RepresentationOutput {
        RepresentationOutput(keepLimit: keepLimit, send: nil)
    }

    /// A second writing: each piece handed to `send`, which answers false
    /// when the body is no longer wanted.
    public static func sending(_ send: @escaping ([UInt8]) -> Bool) -> RepresentationOutput {
        RepresentationOutput(keepLimit: 0, send: send)
    }

    private init(keepLimit: Int, send: (([UInt8]) -> Bool)?) {
        self.keepLimit = keepLimit
        self.send = send
        kept = send == nil ? [] : nil
    }

    /// Whether the whole body was kept (it stayed under the limit).
    public var isWhole: Bool { kept != nil }

    /// Takes `bytes` (then emptied, its capacity kept).
    func take(_ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        length += bytes.count
        if let send {
            if isOpen { isOpen = send(bytes) }
        } else {
            digest.add(bytes)
            if kept != nil {
                if length <= keepLimit {
                    kept!.append(contentsOf: bytes)
                } else {
                    kept = nil
                }
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }
}

/// The FNV-1a 64-bit digest of a sequence of bytes, added piece by piece.
public struct BodyDigest: Sendable {
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func add(_ bytes: [UInt8]) {
        var hash = value
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        value = hash
    }
}
