import Concurrency
import ModelStore
import Synchronization

/// Request counters for `/metrics`, in the Prometheus text format.
public final class Metrics: Sendable {
    /// The answers of one route, by status, counted by the answer
    /// pipeline (`RequestMetrics`); found once when the routes are built,
    /// not per request.
    final class RouteCounter: Sendable {
        let route: String
        private let counts = Locked<[(status: Int, count: Int)]>([])

        init(route: String) {
            self.route = route
        }

        func record(_ status: Int) {
            counts.withLock { Self.add(status, to: &$0) }
        }

        private static func add(_ status: Int, to counts: inout [(status: Int, count: Int)]) {
            if let index = counts.firstIndex(where: { $0.status == status }) {
                counts[index].count += 1
            } else {
                counts.append((status, 1))
            }
        }

        var snapshot: [(status: Int, count: Int)] { counts.withLock { $0 } }
    }

    private let routes = Locked<[String: RouteCounter]>([:])
    private let wakeups = Atomic<Int>(0)

    public init() {}

    /// The counter of `route`, made on first use.
    func counter(for route: String) -> RouteCounter {
        routes.withLock { routes in
            if let counter = routes[route] { return counter }
            let counter = RouteCounter(route: route)
            routes[route] = counter
            return counter
        }
    }

    func recordWakeups(_ count: Int) {
        wakeups.add(count, ordering: .relaxed)
    }

    /// The exposition text; `counters` and `gauges` are name, help and
    /// value; each of `quotas` is a `quota` label of three families.
    func render(counters: [(name: String, help: String, value: Int64)] = [], gauges: [(name: String, help: String, value: Int64)],
                quotas: [QuotaReport] = []) -> String
    {
        var out = "# HELP observable_http_requests_total HTTP requests answered, by route and status.\n"
        out += "# TYPE observable_http_requests_total counter\n"
        let routeCounters = routes.withLock { $0.values }.sorted { $0.route < $1.route }
        for counter in routeCounters {
            for (status, count) in counter.snapshot.sorted(by: { $0.status < $1.status }) {
                out += "observable_http_requests_total{route=\"\(counter.route)\",status=\"\(status)\"} \(count)\n"
            }
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
        guard !quotas.isEmpty else { return out }
        let families: [(name: String, type: String, help: String, value: (QuotaReport) -> Int64?)] = [
            ("observable_quota_limit", "gauge", "Each quota's limit (of job_interval_ms, the shortest interval allowed).", { $0.limit }),
            ("observable_quota_used", "gauge", "What is used of each quota now; of a quota per client, the most one client uses.", { $0.used }),
            ("observable_quota_refusals_total", "counter", "Requests each quota refused.", { $0.refusals }),
        ]
        for family in families {
            out += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.type)\n"
            for quota in quotas {
                if let value = family.value(quota) { out += "\(family.name){quota=\"\(quota.name)\"} \(value)\n" }
            }
        }
        return out
    }
}
