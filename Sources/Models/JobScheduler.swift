import HeapModule
import Concurrency

/// Advances server-driven jobs from one thread, whatever their number.
///
/// Jobs wait in a min-heap of due times. The thread sleeps until the
/// earliest is due, then hands every job due by then to `advance` as one
/// batch (which the store commits as one transaction) and puts back those
/// still running, one interval later. Ticks are at least
/// `minimumTickSpacing` apart so that many jobs with staggered due times
/// share transactions instead of each taking its own.
final class JobScheduler: Sendable {
    /// Advances the jobs with these ids; returns the ids still running.
    typealias Advance = @Sendable ([String]) -> Set<String>

    static let minimumTickSpacing: UInt64 = 10_000_000  // nanoseconds, the shortest interval

    private struct Entry: Comparable {
        let due: UInt64  // monotonic nanoseconds
        let id: String

        static func < (a: Entry, b: Entry) -> Bool { a.due < b.due }
    }

    private enum Phase {
        case idle, running, stopped
    }

    private struct Queue {
        var heap = Heap<Entry>()
        /// The due time and interval of every scheduled job; a heap entry
        /// whose due time differs is stale (its job was cancelled or rescheduled).
        var scheduled: [String: (due: UInt64, interval: UInt64)] = [:]
        var notBefore: UInt64 = 0
        var phase = Phase.idle
    }

    private enum Step {
        case stop
        case wait(until: UInt64?)
        case tick([Entry])
    }

    private let queue = Locked(Queue())
    /// The thread, once started; woken when the earliest due time moves earlier.
    private let thread = Locked<ServiceThread?>(nil)

    static var now: UInt64 { ServerClock.now.nanoseconds }

    /// Starts the thread; jobs scheduled before start wait for it.
    func start(advance: @escaping Advance) {
        let begin = queue.withLock { queue -> Bool in
            guard queue.phase == .idle else { return false }
            queue.phase = .running
            return true
        }
        guard begin else { return }
        let started = ServiceThread.start(name: "observable.jobs") { [self] thread in run(advance, on: thread) }
        thread.withLock { $0 = started }
    }

    /// Stops the thread promptly, after the tick in flight (if any) has
    /// committed. Jobs scheduled afterwards are not advanced.
    func stop() {
        let wasRunning = queue.withLock { queue -> Bool in
            defer { queue.phase = .stopped }
            return queue.phase == .running
        }
        guard wasRunning else { return }
        thread.withLock { $0 }?.stop()
    }

    /// Advances job `id` every `intervalMs`, the first time one interval from
    /// now. Scheduling a job already scheduled changes nothing.
    func schedule(_ id: String, intervalMs: Int64) {
        let interval = UInt64(intervalMs) * 1_000_000
        let due = Self.now + interval
        let isEarliest = queue.withLock { queue -> Bool in
            guard queue.scheduled[id] == nil, queue.phase != .stopped else { return false }
            let earliest = queue.heap.min?.due
            queue.scheduled[id] = (due, interval)
            queue.heap.insert(Entry(due: due, id: id))
            return earliest.map { due < $0 } ?? true
        }
        if isEarliest { thread.withLock { $0 }?.wake() }
    }

    /// Stops advancing job `id`.
    func unschedule(_ id: String) {
        queue.withLock { _ = $0.scheduled.removeValue(forKey: id) }
    }

    /// The number of jobs waiting for their next advance.
    var scheduledCount: Int { queue.withLock { $0.scheduled.count } }

    private func run(_ advance: Advance, on thread: ServiceThread) {
        while true {
            switch nextStep() {
            case .stop:
                return
            case .wait(let deadline):
                // With nothing scheduled, an hour at a time: `schedule` and `stop` wake it.
                let until = deadline.map { ServerClock.Instant(nanoseconds: $0) } ?? ServerClock.now.advanced(by: .seconds(3600))
                if thread.sleep(until: until) { return }
            case .tick(let entries):
                guard !entries.isEmpty else { continue }
                let running = advance(entries.map(\.id))
                reschedule(entries, running: running)
            }
        }
    }

    private func nextStep() -> Step {
        queue.withLock { queue -> Step in
            guard queue.phase == .running else { return .stop }
            // Drop stale entries so the earliest one is real.
            while let first = queue.heap.min, queue.scheduled[first.id]?.due != first.due {
                _ = queue.heap.popMin()
            }
            guard let first = queue.heap.min else { return .wait(until: nil) }
            let now = Self.now
            let start = max(first.due, queue.notBefore)
            guard start <= now else { return .wait(until: start) }
            var due: [Entry] = []
            while let entry = queue.heap.min, entry.due <= now {
                _ = queue.heap.popMin()
                if queue.scheduled[entry.id]?.due == entry.due { due.append(entry) }
            }
            queue.notBefore = now + Self.minimumTickSpacing
            return .tick(due)
        }
    }

    private func reschedule(_ entries: [Entry], running: Set<String>) {
        let now = Self.now
        queue.withLock { queue in
            for entry in entries {
                guard let scheduled = queue.scheduled[entry.id], scheduled.due == entry.due else { continue }
                guard running.contains(entry.id) else {
                    queue.scheduled[entry.id] = nil
                    continue
                }
                // Keep the cadence; a tick that ran late does not pile up catch-up ticks.
                let due = max(entry.due + scheduled.interval, now)
                queue.scheduled[entry.id] = (due, scheduled.interval)
                queue.heap.insert(Entry(due: due, id: entry.id))
            }
        }
    }
}
