import FoundationEssentials
import JSON
import SQLiteStore

extension Store {
    /// Creates a job. With `step` and `intervalMs` the server advances it in
    /// the background; without them clients report its progress.
    public func createJob(total: Int64, step: Int64?, intervalMs: Int64?) throws -> Job {
        try write(Writes.createJob(total: total, step: step, intervalMs: intervalMs))
    }

    /// Records progress a client reports. Above `total` it is clamped; below
    /// the current value it is refused; the current value again changes nothing.
    public func reportProgress(of id: String, current reported: Int64) throws -> Job {
        try write(Writes.reportProgress(of: id, current: reported))
    }

    /// Cancels a job: it stops advancing and is gone.
    public func deleteJob(_ id: String, ifMatch: String? = nil) throws {
        try write(Writes.deleteJob(id, ifMatch: ifMatch))
    }

    /// Advances the server-driven jobs `ids` by their step, all in one
    /// transaction; each job's progress is still a change of its own.
    /// Returns the ids still running.
    func advanceJobs(_ ids: [String]) -> Set<String> {
        do {
            return try write { tx in
                var running = Set<String>()
                for id in ids {
                    guard let job = tx.state.jobs[id], let step = job.step, !job.isComplete else { continue }
                    let advanced = try tx.setProgress(of: job, to: job.current + min(step, job.total - job.current))
                    if !advanced.isComplete { running.insert(id) }
                }
                return running
            }
        } catch {
            // Try again at the next interval: the progress is as it was.
            logger.error("advancing \(ids.count) jobs failed: \(error)")
            return Set(ids)
        }
    }

    /// Starts advancing the server-driven jobs, including those that were
    /// running when the server last stopped, from their persisted progress.
    public func startBackgroundWork() {
        jobScheduler.start { [weak self] ids in self?.advanceJobs(ids) ?? [] }
        for job in state.jobs.all.values where !job.isComplete {
            if let intervalMs = job.intervalMs { jobScheduler.schedule(job.id, intervalMs: intervalMs) }
        }
    }

    /// Stops advancing jobs, after the tick in flight has committed; called
    /// before the database closes.
    public func stopBackgroundWork() {
        jobScheduler.stop()
    }
}

extension Writes {
    /// Creates a job. With `step` and `intervalMs` the server advances it in
    /// the background; without them clients report its progress.
    public static func createJob(total: Int64, step: Int64?, intervalMs: Int64?) throws -> PreparedWrite<Job> {
        guard Job.totalRange.contains(total) else {
            throw ModelError.unprocessable("total must be between 1 and 1000000000")
        }
        guard (step == nil) == (intervalMs == nil) else {
            throw ModelError.unprocessable("step and intervalMs go together: give both for a job the server advances, or neither")
        }
        if let step, step < 1 { throw ModelError.unprocessable("step must be at least 1") }
        if let intervalMs, !Job.intervalRange.contains(intervalMs) {
            throw ModelError.unprocessable("intervalMs must be between 10 and 3600000")
        }
        return PreparedWrite({ tx in
            let job = Job(id: Identifier.make(), current: 0, total: total, step: step, intervalMs: intervalMs,
                          position: tx.state.jobs.nextPosition)
            try tx.execute("INSERT INTO jobs (id, position, current, total, step, interval_ms) VALUES (?, ?, ?, ?, ?, ?)",
                           [.text(job.id), .integer(job.position), .integer(0), .integer(total),
                            step.map(SQLValue.integer) ?? .null, intervalMs.map(SQLValue.integer) ?? .null])
            tx.state.jobs.nextPosition += 1
            tx.state.jobs.all[job.id] = job
            tx.insert(into: Jobs.path, element: job.representation())
            return job
        }, afterCommit: { store, job in
            if let intervalMs { store.jobScheduler.schedule(job.id, intervalMs: intervalMs) }
        })
    }

    /// Records progress a client reports. Above `total` it is clamped; below
    /// the current value it is refused; the current value again changes nothing.
    public static func reportProgress(of id: String, current reported: Int64) -> PreparedWrite<Job> {
        PreparedWrite { tx in
            guard let job = tx.state.jobs[id] else { throw ModelError.notFound("no job \(id)") }
            guard !job.isAdvancedByServer else {
                throw ModelError.unprocessable("job \(id) is advanced by the server; only a job created without step and intervalMs takes reported progress")
            }
            guard reported >= job.current else {
                throw ModelError.unprocessable("progress never goes backwards: job \(id) is at \(job.current), \(reported) was reported")
            }
            return try tx.setProgress(of: job, to: min(reported, job.total))
        }
    }

    /// Cancels a job: it stops advancing and is gone.
    public static func deleteJob(_ id: String, ifMatch: String? = nil) -> PreparedWrite<Void> {
        PreparedWrite({ tx in
            guard let job = tx.state.jobs[id] else { throw ModelError.notFound("no job \(id)") }
            try tx.require(ifMatch: ifMatch, current: job.representation())
            try tx.execute("DELETE FROM jobs WHERE id = ?", [.text(id)])
            tx.state.jobs.all[id] = nil
            tx.remove(from: Jobs.path, element: job.representation())
        }, afterCommit: { store, _ in store.jobScheduler.unschedule(id) })
    }
}

extension WriteTransaction {
    /// Moves `job` to `current`, persisting it and recording the change of
    /// its progress and, when this completes it, of `isComplete`.
    mutating func setProgress(of job: Job, to current: Int64) throws -> Job {
        guard current != job.current else { return job }
        var new = job
        new.current = current
        try execute("UPDATE jobs SET current = ? WHERE id = ?", [.integer(current), .text(job.id)])
        state.jobs.all[job.id] = new
        set(job.progressPath, old: job.progress, new: new.progress)
        set(job.isCompletePath, old: .bool(job.isComplete), new: .bool(new.isComplete))
        return new
    }
}
