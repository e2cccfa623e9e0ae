import HTTPServer
import JSON
import ModelStore

extension ObservableAPI {
    func addOperationRoutes(to router: Router) {
        router.get("/healthz", access: .open) { [self] context in
            guard store.isDatabaseReachable else { throw ModelError(.busy, "The database cannot be reached; retry shortly.") }
            let seq = store.lastSeq
            // Degraded while writes fail for a full disk: reads go on.
            let degraded = store.outOfSpace.isFailing
            var body: [UInt8] = []
            var object = JSONObjectWriting(into: &body)
            object.member("status", degraded ? "degraded" : "ok", into: &body)
            object.member("seq", seq, into: &body)
            if degraded { object.member("detail", "writes fail: the disk is full", into: &body) }
            object.end(into: &body)
            var response = HTTPResponse(status: degraded ? 503 : 200, body: body)
            response.setHeader("Observation-Cursor", String(seq))
            response.setHeader("Content-Type", "application/json")
            response.setHeader("Cache-Control", "no-store")
            return .response(response)
        }
        router.get("/metrics") { [self] context in
            let daemon = daemonGauges()
            let commits = store.commitCounts
            let facts = store.observerFacts
            let text = metrics.render(counters: [
                ("observable_commits_total", "Transactions committed by writes.", commits.transactions),
                ("observable_writes_committed_total", "Writes committed; several waiting writes share one transaction.", commits.writes),
                ("observable_disk_full_refusals_total", "Writes refused because the disk was full (507).", store.outOfSpace.refusals.value),
                ("observable_large_reads_total", "Large reads begun, each rendered on a thread of its own.", Int64(largeReads.admitted)),
            ], gauges: [
                ("observable_longpolls_parked", "Long-polls parked now.", Int64(daemon.parked)),
                ("observable_streams_open", "Event streams of the change feed open now.", Int64(daemon.streams)),
                ("observable_connections", "HTTP connections open now.", Int64(daemon.connections)),
                ("observable_observers", "Observers known.", Int64(facts.observers)),
                ("observable_observer_clients", "Clients holding observers.", Int64(facts.clients)),
                ("observable_registry_bytes", "Bytes the observation registry is estimated to hold: observers, their reads and inboxes, the retained change log.",
                 Int64(facts.bytes)),
                ("observable_change_seq", "Seq of the newest committed change.", store.lastSeq),
                ("observable_disk_full", "1 while writes fail because the disk is full (until one commits), else 0.",
                 store.outOfSpace.isFailing ? 1 : 0),
                ("observable_large_reads", "Large reads in progress now: rendering, or sending a body a piece at a time.", Int64(largeReads.count)),
                ("observable_large_reads_waiting", "Large reads waiting for a place now (--max-large-reads, --max-large-reads-per-client).",
                 Int64(largeReads.waiting)),
            ], quotas: quotaReports)
            var response = HTTPResponse(status: 200, body: Array(text.utf8))
            response.setHeader("Observation-Cursor", String(store.lastSeq))
            response.setHeader("Content-Type", "text/plain; version=0.0.4")
            response.setHeader("Cache-Control", "no-store")
            return .response(response)
        }
    }

    /// Every quota's report: the store's, the background work's, the feed's.
    var quotaReports: [QuotaReport] {
        store.quotaReports + store.catalog.background.flatMap { ($0 as? any QuotaReporting)?.quotaReports ?? [] } + feed.quotaReports
            + [QuotaReport("writes_per_second", limit: Int(limits.maxWritesPerSecond), used: nil, refusals: writeRate.refusals)]
    }
}
