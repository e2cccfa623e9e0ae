/// Keys one observer read at one `seq`: what one read adds, or what one
/// insert implies for one of its receivers.
public struct ObserverReads: Sendable {
    public let observer: String
    public let seq: Int64
    public let keys: [PropertyKey]

    public init(observer: String, seq: Int64, keys: [PropertyKey]) {
        self.observer = observer
        self.seq = seq
        self.keys = keys
    }
}
