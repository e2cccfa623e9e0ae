import ModelObservation

/// What a read returns: the JSON body and the property keys it contains,
/// which become an observer's reads.
public struct Representation: Sendable {
    /// The body, serialised.
    public var bytes: [UInt8]
    public var reads: [PropertyKey]
    /// The next page of each paged collection shown that has more.
    public var nextPages: [NextPage] = []

    public init(bytes: [UInt8], reads: [PropertyKey], nextPages: [NextPage] = []) {
        self.bytes = bytes
        self.reads = reads
        self.nextPages = nextPages
    }

    /// The body as text (a change's `new` or `old`).
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}
