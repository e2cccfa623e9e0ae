import Concurrency
import JSON
import ModelStore

/// Jobs with progress (seed: ObservableObject with progress callbacks):
/// advanced by the server every `intervalMs` by `step`, or by clients
/// reporting how far they have come. `current` never passes `total`;
/// `isComplete` turns true once, when it reaches it.
public enum Jobs {
    public static let jobs = Resource.collection("jobs", element: "job", at: "/jobs", allowing: [.list, .get, .delete]) {
        Field.integer("current", access: .hidden)
        Field.integer("total", access: .hidden)
        /// What the server adds every `intervalMs`; null for a job whose progress clients report.
        Field.integer("step", nullable: true, access: .hidden)
        Field.integer("intervalMs", nullable: true, access: .hidden)
        Computed("progress", .schema("Progress")) { _, job in ["current": job["current"], "total": job["total"]] }
        Computed("isComplete", .boolean, description: "`progress.current == progress.total`; turns true once") { _, job in
            .bool(job.int("current") >= job.int("total"))
        }
    }

    /// Advances the jobs the server drives, from one thread.
    ///
    /// On a database several instances share, one instance at a time runs
    /// the jobs: the one holding the `jobs` claim. The others look every
    /// second whether the claim is free (its holder gone) and, once theirs,
    /// take up every running job from the shared state.
    final class Runner: BackgroundWork {
        let scheduler = JobScheduler()
        private let claiming = Locked<ServiceThread?>(nil)

        func start(_ store: Store) {
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
            for job in store.state[jobs].values where job.int("current") < job.int("total") {
                if let intervalMs = job["intervalMs"].intValue { scheduler.schedule(job.id, intervalMs: intervalMs) }
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
                        guard let job = tx.state[jobs][id], let step = job["step"].intValue else { continue }
                        let current = job.int("current"), total = job.int("total")
                        guard current < total else { continue }
                        let advanced = min(current + step, total)
                        try tx.update(jobs, id) { $0["current"] = .int(advanced) }
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

    static func actions(_ runner: Runner) -> [Action] {
        let total = Field.integer("total", range: 1...1_000_000_000)
        let step = Field.integer("step").optional
        let interval = Field.integer("intervalMs", range: 10...3_600_000).optional
        return [
            Action("POST", "/jobs", input: [total.required, step, interval]) { input in
                let total = input.body.int("total") ?? 0
                let step = input.body.int("step"), intervalMs = input.body.int("intervalMs")
                guard (step == nil) == (intervalMs == nil) else {
                    throw ModelError.unprocessable("step and intervalMs go together: give both for a job the server advances, or neither")
                }
                if let step, step < 1 { throw ModelError.unprocessable("step must be at least 1") }
                let job = Record.new(jobs, ["current": 0, "total": .int(total), "step": step.map(JSONValue.int) ?? .null,
                                            "intervalMs": intervalMs.map(JSONValue.int) ?? .null])
                return .write(PreparedWrite({ tx in
                    let stored = try tx.insert(job, into: jobs)
                    return .created(jobs.representation(of: stored, in: tx.state), at: stored.path)
                }, afterCommit: { _, _ in
                    if let intervalMs { runner.scheduler.schedule(job.id, intervalMs: intervalMs) }
                }))
            },
            // Above `total` is clamped; below the current value is refused;
            // the current value again changes nothing.
            Action("POST", "/jobs/:id/progress", input: [Field.integer("current").required]) { input in
                let id = input.parameter("id"), reported = input.body.int("current") ?? 0
                return .write(PreparedWrite { tx in
                    guard let job = tx.state[jobs][id] else { throw ModelError.notFound("no job \(id)") }
                    guard job["step"] == .null else {
                        throw ModelError.unprocessable("job \(id) is advanced by the server; only a job created without step and intervalMs takes reported progress")
                    }
                    guard reported >= job.int("current") else {
                        throw ModelError.unprocessable("progress never goes backwards: job \(id) is at \(job.int("current")), \(reported) was reported")
                    }
                    let updated = try tx.update(jobs, id) { $0["current"] = .int(min(reported, job.int("total"))) }
                    return .ok(jobs.representation(of: updated, in: tx.state))
                })
            },
        ]
    }
}
