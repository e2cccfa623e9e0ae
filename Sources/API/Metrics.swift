import Locks
import Synchronization

/// Request counters for `/metrics`, in the Prometheus text format.
public final class Metrics: Sendable {
    struct Key: Hashable {
        let route: String
        let status: Int
    }

    private let requests = Locked<[Key: Int]>([:])
    private let wakeups = Atomic<Int>(0)

    public init() {}

    public func recordRequest(route: String, status: Int) {
        requests.withLock { $0[Key(route: route, status: status), default: 0] += 1 }
    }

    func recordWakeups(_ count: Int) {
        wakeups.add(count, ordering: .relaxed)
    }

    /// The exposition text; `counters` and `gauges` are name, help and value.
    func render(counters: [(name: String, help: String, value: Int64)] = [], gauges: [(name: String, help: String, value: Int64)]) -> String {
        var out = "# HELP observable_http_requests_total HTTP requests answered, by route and status.\n"
        out += "# TYPE observable_http_requests_total counter\n"
        let counts = requests.withLock { $0 }
        for (key, count) in counts.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out += "observable_http_requests_total{route=\"\(key.route)\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP observable_longpoll_wakeups_total Parked long-polls woken by a change they read.\n"
        out += "# TYPE observable_longpoll_wakeups_total counter\n"
        out += "observable_longpoll_wakeups_total \(wakeups.load(ordering: .relaxed))\n"
        for counter in counters {
            out += "# HELP \(counter.name) \(counter.help)\n# TYPE \(counter.name) counter\n\(counter.name) \(counter.value)\n"
        }
        for gauge in gauges {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) gauge\n\(gauge.name) \(gauge.value)\n"
        }
        return out
    }
}
