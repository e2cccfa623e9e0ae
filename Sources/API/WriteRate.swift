import Concurrency
import HTTPServer
import ModelStore

/// Each client's write rate (`--max-writes-per-second`, `--write-burst`):
/// a token bucket per client, by its token or address (`Clients`). A write
/// takes a token; a client with none left is answered `429` with
/// `Retry-After`, and nothing is written. Trusted addresses and unknown
/// clients (a harness's connections) are not counted.
final class WriteRate: Sendable {
    private struct Bucket {
        var tokens: Double
        var stamp: UInt64
    }

    let perSecond: Double
    let burst: Double
    /// The clients kept at most: past it, those whose bucket is full again
    /// (idle long enough to have forgotten them) are dropped.
    static let maxClients = 100_000
    private let buckets = Locked([String: Bucket]())
    let refusals = RefusalCounter()

    init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = Double(max(burst, 1))
    }

    /// Takes a token for `client` at `now` (monotonic nanoseconds): nil when
    /// the write may go on, else the seconds to wait before one will.
    func take(_ client: String, now: UInt64) -> Int? {
        let wait: Int? = buckets.withLock { buckets in
            var bucket = buckets[client] ?? Bucket(tokens: burst, stamp: now)
            let elapsed = Double(now &- bucket.stamp) / 1e9
            bucket.tokens = min(burst, bucket.tokens + max(0, elapsed) * perSecond)
            bucket.stamp = now
            defer {
                if buckets[client] == nil, buckets.count >= Self.maxClients { forgetIdle(&buckets, now: now) }
                buckets[client] = bucket
            }
            guard bucket.tokens >= 1 else { return Int(((1 - bucket.tokens) / perSecond).rounded(.up)) }
            bucket.tokens -= 1
            return nil
        }
        if wait != nil { refusals.record() }
        return wait.map { max($0, 1) }
    }

    private func forgetIdle(_ buckets: inout [String: Bucket], now: UInt64) {
        let full = burst / perSecond
        buckets = buckets.filter { Double(now &- $0.value.stamp) / 1e9 + $0.value.tokens / perSecond < full }
    }
}

/// Writes count against their client's rate: a route that changes a model
/// (`RouteAccess.write`) is called only with a token of the client's bucket.
struct WriteRateCheck: AnswerMiddleware {
    let rate: WriteRate
    let clients: Clients
    var phases: AnswerPhases { .handle }

    func handle(_ request: HTTPRequest, context: inout RouteContext,
                next: (HTTPRequest, inout RouteContext) throws -> Reply) throws -> Reply
    {
        if case .write = context.access, let client = clients.client(of: context),
           let wait = rate.take(client, now: ServerClock.now.nanoseconds)
        {
            throw APIError(429, "this client writes faster than the \(Self.rate(rate)) writes a second one client may make "
                + "(--max-writes-per-second, bursts of \(Int(rate.burst))): nothing was written; try again after \(wait) s",
                headers: [("Retry-After", String(wait))])
        }
        return try next(request, &context)
    }

    private static func rate(_ rate: WriteRate) -> String {
        rate.perSecond == rate.perSecond.rounded() ? String(Int(rate.perSecond)) : String(rate.perSecond)
    }
}
