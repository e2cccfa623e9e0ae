/// One quota as `/metrics` shows it: a limit that keeps one client, or all
/// of them together, from taking more than the server can give, what is
/// used of it now, and the requests it refused.
public struct QuotaReport: Sendable {
    /// Its name in `/metrics` (`observers_per_client`).
    public let name: String
    public let limit: Int64
    /// What is used of it now (of a quota per client, the most that one
    /// client uses); nil for a quota on each request alone (a TTL).
    public let used: Int64?
    public let refusals: Int64

    public init(_ name: String, limit: Int, used: Int?, refusals: RefusalCounter) {
        self.name = name
        self.limit = Int64(limit)
        self.used = used.map(Int64.init)
        self.refusals = refusals.value
    }
}
