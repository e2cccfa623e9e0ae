import Foundation

/// A serial executor that runs its jobs, one at a time, on a thread of its
/// own: an actor on it can tell that code runs there and nowhere else.
final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
    let name: String
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false
    /// The thread's id, set before it runs a job.
    private var thread: pthread_t?

    init(name: String) {
        self.name = name
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Whether the calling code runs on this executor's thread.
    var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        return thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    /// Ends the thread once the jobs enqueued so far have run.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        thread = pthread_self()
        condition.unlock()
        while true {
            condition.lock()
            while jobs.isEmpty, !stopped { condition.wait() }
            if jobs.isEmpty { condition.unlock(); return }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedSerialExecutor())
        }
    }
}
