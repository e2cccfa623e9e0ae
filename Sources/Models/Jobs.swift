import Concurrency
import JSON
import ModelStore

/// Jobs with progress (seed: ObservableObject with progress callbacks):
/// advanced by the server every `intervalMs` by `step`, or by clients
/// reporting how far they have come. `current` never passes `total`;
/// `isComplete` turns true once, when it reaches it.
public enum Jobs {
    public static let current = Stored<Int64>(.integer("current", access: .hidden).checked(.atLeast(0)))
    public static let total = Stored<Int64>(.integer("total", access: .hidden, range: totalRange))
    /// What the server adds every `intervalMs`; null for a job whose progress clients report.
    public static let step = Stored<Int64?>(.integer("step", nullable: true, access: .hidden).checked(.atLeast(1)))
    public static let intervalMs = Stored<Int64?>(.integer("intervalMs", nullable: true, access: .hidden, range: Limits.intervalRange))
    static let totalRange: ClosedRange<Int64> = 1...1_000_000_000

    public static let jobs = Resource.collection("jobs", element: "job", at: "/jobs", allowing: [.list, .get, .delete],
                                                 checks: [.atMost(current.field, total.field), .nullTogether(step.field, intervalMs.field)],
                                                 queryable: ["isComplete"]) {
        current
        total
        step
        intervalMs
        Computed("progress", .schema("Progress")) { _, job in ["current": job[json: current], "total": job[json: total]] }
        Computed("isComplete", .boolean, description: "`progress.current == progress.total`; turns true once") { job in
            .bool(job[current] >= job[total])
        }
    }

    /// What `POST /jobs` takes, and `POST /jobs/{id}/progress`.
    enum Input {
        static let total = Stored<Int64>(.integer("total", range: totalRange))
        static let step = Stored<Int64>(.integer("step"))
        static let intervalMs = Stored<Int64>(.integer("intervalMs", range: Limits.intervalRange))
        static let current = Stored<Int64>(.integer("current"))
    }

    /// The quotas on the jobs the server advances: how many run at once,
    /// and how often each is advanced (each advance is a change).
    public struct Limits: Sendable {
        /// Most jobs the server advances at once (`--max-running-jobs`).
        public var maxRunning = 100
        /// Shortest `intervalMs` a job may ask for (`--min-job-interval`):
        /// one job makes at most `1000 / minIntervalMs` changes a second.
        public var minIntervalMs = 100
        /// What `minIntervalMs` may be: the range of `intervalMs`.
        public static let intervalRange: ClosedRange<Int64> = 10...3_600_000

        public init() {}
    }

    /// Advances the jobs the server drives, from one thread.
    ///
    /// On a database several instances share, one instance at a time runs
    /// the jobs: the one holding the `jobs` claim. The others look every
    /// second whether the claim is free (its holder gone) and, once theirs,
    /// take up every running job from the shared state.
    final class Runner: BackgroundWork, QuotaReporting {
        let scheduler = JobScheduler()
        let limits: Limits
        let runningRefusals = RefusalCounter()
        let intervalRefusals = RefusalCounter()
        private let claiming = Locked<ServiceThread?>(nil)
        /// Weak: the store holds the catalog that holds this.
        private let store = Locked(Weak<Store>())

        init(limits: Limits = Limits()) {
            self.limits = limits
        }

        var quotaReports: [QuotaReport] {
            let running = store.withLock { $0.object }.map { Jobs.running(in: $0.state).count }
            return [
                QuotaReport("running_jobs", limit: limits.maxRunning, used: running ?? 0, refusals: runningRefusals),
                QuotaReport("job_interval_ms", limit: limits.minIntervalMs, used: nil, refusals: intervalRefusals),
            ]
        }

        func start(_ store: Store) {
            self.store.withLock { $0.object = store }
            scheduler.start { [weak store] ids in
                // Not ours (any more): dropped here, taken up by the holder.
                guard let store, store.claim("jobs") else { return [] }
                return Self.advance(ids, in: store)
            }
            if store.claim("jobs") { scheduleRunning(store) }
            guard store.isShared else { return }
            let thread = ServiceThread.start(name: "observable.jobs.claim") { [weak store, scheduler] thread in
                while !thread.sleep(seconds: 1) {
                    guard let store else { return }
                    if store.claim("jobs") { Self.scheduleRunning(store, on: scheduler) }
                }
            }
            claiming.withLock { $0 = thread }
        }

        /// Schedules every job the server drives that has not finished (a job
        /// scheduled already is left as it is).
        private func scheduleRunning(_ store: Store) {
            Self.scheduleRunning(store, on: scheduler)
        }

        private static func scheduleRunning(_ store: Store, on scheduler: JobScheduler) {
            for job in store.state[jobs].values where job[current] < job[total] {
                if let intervalMs = job[Jobs.intervalMs] { scheduler.schedule(job.id, intervalMs: intervalMs) }
            }
        }

        func stop() {
            claiming.withLock { $0 }?.stop()
            scheduler.stop()
        }

        /// Advances the jobs `ids` by their step, all in one transaction;
        /// each job's progress is still a change of its own. Returns the ids
        /// still running.
        static func advance(_ ids: [String], in store: Store) -> Set<String> {
            do {
                return try store.write { tx in
                    var running = Set<String>()
                    for id in ids {
                        guard let job = tx.state[jobs][id], let step = job[Jobs.step] else { continue }
                        let current = job[Jobs.current], total = job[Jobs.total]
                        guard current < total else { continue }
                        let advanced = min(current + step, total)
                        try tx.update(jobs, id) { $0[Jobs.current] = advanced }
                        if advanced < total { running.insert(id) }
                    }
                    return running
                }
            } catch {
                // Tried again at the next interval: the progress is as it was.
                store.logger.error("advancing \(ids.count) jobs failed: \(error)")
                return Set(ids)
            }
        }
    }

    /// How many jobs the server advances and has not finished in `state`,
    /// and the seconds until the first of them finishes (nil for none).
    static func running(in state: ModelState) -> (count: Int, soonest: Double?) {
        var count = 0
        var soonest: Double?
        for job in state[jobs].values {
            guard let step = job[Jobs.step], let intervalMs = job[Jobs.intervalMs], step > 0 else { continue }
            let left = job[total] - job[current]
            guard left > 0 else { continue }
            count += 1
            let steps = left / step + (left % step == 0 ? 0 : 1)
            let seconds = Double(steps) * Double(intervalMs) / 1000
            soonest = min(soonest ?? seconds, seconds)
        }
        return (count, soonest)
    }

    /// Refuses a job the server would advance when `limits.maxRunning` run
    /// already in `state`: `429`, with the seconds until the first of them
    /// finishes (at least 1, at most an hour) in `Retry-After`.
    static func checkRunning(in state: ModelState, _ runner: Runner) throws {
        let (count, soonest) = running(in: state)
        guard count >= runner.limits.maxRunning else { return }
        runner.runningRefusals.record()
        let retryAfter = Int(min(max((soonest ?? 1).rounded(.up), 1), 3600))
        throw ModelError(.tooManyRequests(retryAfter: retryAfter),
                         "the server already advances \(count) job\(count == 1 ? "" : "s"), the most it runs at once (--max-running-jobs): try again once one finishes or is deleted, or report progress yourself (a job without step and intervalMs)")
    }

    static func actions(_ runner: Runner) -> [Action] {
        [
            Action("/jobs", input: [Input.total.field.required, Input.step.field.optional, Input.intervalMs.field.optional]) { input in
                let total = input.body[Input.total] ?? 0
                let step = input.body[Input.step], intervalMs = input.body[Input.intervalMs]
                guard (step == nil) == (intervalMs == nil) else {
                    throw ModelError.unprocessable("step and intervalMs go together: give both for a job the server advances, or neither")
                }
                if let step, step < 1 { throw ModelError.unprocessable("step must be at least 1") }
                if let intervalMs, intervalMs < runner.limits.minIntervalMs {
                    runner.intervalRefusals.record()
                    throw ModelError.unprocessable("intervalMs must be at least \(runner.limits.minIntervalMs) on this server (--min-job-interval): one job is advanced at most \(1000 / runner.limits.minIntervalMs) times a second")
                }
                let job = Record.new(jobs, setting: [Jobs.current.with(0), Jobs.total.with(total), Jobs.step.with(step),
                                                     Jobs.intervalMs.with(intervalMs)])
                return .write(PreparedWrite({ tx in
                    // Decided on the current state, so on every instance.
                    if intervalMs != nil { try checkRunning(in: tx.state, runner) }
                    let stored = try tx.insert(job, into: jobs)
                    return .created(jobs.representation(of: stored, in: tx.state), at: stored.path)
                }, afterCommit: { _, _ in
                    if let intervalMs { runner.scheduler.schedule(job.id, intervalMs: intervalMs) }
                }))
            },
            // Above `total` is clamped; below the current value is refused;
            // the current value again changes nothing.
            Action("/jobs/:id/progress", input: [Input.current.field.required]) { input in
                let id = input.parameter("id"), reported = input.body[Input.current] ?? 0
                return .write(PreparedWrite { tx in
                    guard let job = tx.state[jobs][id] else { throw ModelError.notFound("no job \(id)") }
                    guard job[step] == nil else {
                        throw ModelError.unprocessable("job \(id) is advanced by the server; only a job created without step and intervalMs takes reported progress")
                    }
                    guard reported >= job[current] else {
                        throw ModelError.unprocessable("progress never goes backwards: job \(id) is at \(job[current]), \(reported) was reported")
                    }
                    let updated = try tx.update(jobs, id) { $0[current] = min(reported, job[total]) }
                    return .ok(jobs.representation(of: updated, in: tx.state))
                })
            },
        ]
    }
}
