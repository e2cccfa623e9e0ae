import Concurrency
import ModelStore
import SQLiteStore
import Synchronization

/// Copies SQLite's write-ahead log back into the database file on a thread
/// of its own, through a connection of its own, once the log holds
/// `threshold` pages. Left to the writer, the copy and its `fsync` run
/// inside whichever commit crosses the threshold: every write waiting for
/// that commit waits for them too (the tail of a write's latency). A
/// passive checkpoint waits for nobody, and nobody waits for it.
final class Checkpointer: Sendable {
    /// 4,000 pages (16 MiB): a page that many transactions change (the end
    /// of an index, a counter's row) is copied once for more of them.
    static let threshold = 4_000

    /// What the thread and the writer's commit hook share.
    private final class Log: Sendable {
        let connection: Locked<Database>
        /// Pages in the log after the last commit.
        let pages = Atomic<Int>(0)

        init(_ connection: Database) {
            self.connection = Locked(connection)
        }
    }

    private let log: Log
    private let thread: ServiceThread

    init(for database: Database, synchronous: Database.Synchronous) throws {
        let log = Log(try Database(path: database.path, synchronous: synchronous))
        self.log = log
        thread = ServiceThread.start(name: "observable.checkpoint") { thread in
            // Also once a second, so that a log that stopped growing short
            // of the threshold is copied back too.
            while !thread.sleep(seconds: 1) {
                guard log.pages.load(ordering: .relaxed) > 0 else { continue }
                if log.connection.withLock({ $0.checkpoint() }) { log.pages.store(0, ordering: .relaxed) }
            }
        }
        database.onCommit { [log, thread] pages in
            let before = log.pages.exchange(pages, ordering: .relaxed)
            if pages >= Self.threshold && before < Self.threshold { thread.wake() }
        }
    }

    /// Stops the thread and closes its connection (the writer's close then
    /// checkpoints what is left).
    func stop() {
        _ = thread.stop()
        log.connection.withLock { $0.close() }
    }
}
