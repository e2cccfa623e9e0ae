/// A consumer of an observer's feed (a parked poll, or a stream) taken up
/// by an instance: those of the same observer on other instances give way.
public struct ParkedAnnouncement: Sendable {
    public let instance: String
    public let observer: String
    /// A stream, which goes on after answering (a poll answered at once
    /// through another instance must end it).
    public let stream: Bool

    package init(instance: String, observer: String, stream: Bool) {
        self.instance = instance
        self.observer = observer
        self.stream = stream
    }
}
