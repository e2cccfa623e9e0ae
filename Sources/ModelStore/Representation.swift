import ModelObservation

/// What a read returns: the JSON body and the property keys it contains,
/// which become an observer's reads.
public struct Representation: Sendable {
    /// The body, serialised.
    public var bytes: [UInt8]
    public var reads: [PropertyKey]
    /// The next page of each paged collection shown that has more.
    public var nextPages: [NextPage] = []

    /// Set when the body was too large to keep (`RepresentationOutput`):
    /// `bytes` is empty, and the body is written again as it is sent.
    public var streamed: StreamedBody?

    public init(bytes: [UInt8], reads: [PropertyKey], nextPages: [NextPage] = [], streamed: StreamedBody? = nil) {
        self.bytes = bytes
        self.reads = reads
        self.nextPages = nextPages
        self.streamed = streamed
    }

    /// The body as text (a change's `new` or `old`).
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// What the head of an answer needs of a body that was not kept: its
/// length and its digest (the `ETag`'s).
public struct StreamedBody: Sendable, Equatable {
    public let length: Int
    public let digest: UInt64
}
