import ModelObservation
import ModelStore
import PostgresClient

// Observers as rows: made, deleted, their reads cleared, and housekeeping
// (changes pruned, expired observers removed, uses saved).
extension PostgresStorage {
    // MARK: - Observers

    func insertObserver(_ observer: ObserverSnapshot) throws {
        try query("INSERT INTO observers (id, cursor, ttl_seconds, last_used, owner) VALUES ($1, $2, $3, $4, $5)",
                  [observer.id, String(observer.cursor), String(observer.ttlSeconds), String(observer.lastUsed), observer.owner])
        var entry = JournalEntry(version: 0, kind: .observer)
        entry.id = observer.id
        entry.parent = observer.owner
        entry.first = observer.cursor
        entry.last = Int64(observer.ttlSeconds)
        entry.body = String(observer.lastUsed)
        journal(entry)
    }

    func deleteObserver(_ id: String) throws {
        try query("DELETE FROM observers WHERE id = $1", [id])
        var entry = JournalEntry(version: 0, kind: .unobserve)
        entry.id = id
        journal(entry)
    }

    func clearReads(of id: String) throws {
        try query("DELETE FROM observer_reads WHERE observer_id = $1", [id])
        var entry = JournalEntry(version: 0, kind: .clear)
        entry.id = id
        journal(entry)
    }

    func housekeep(pruneThrough seq: Int64, expired: [String], used: [ObserverSnapshot]) throws {
        try run { connection in
            try connection.execute("BEGIN")
            do {
                try connection.query("DELETE FROM changes WHERE seq <= $1", [String(seq)])
                if !used.isEmpty {
                    // Several instances save uses: the latest stays. Cursors
                    // are saved with each answer (`saveCursors`), never
                    // here: an instance's copy may be older than another's.
                    try connection.query(
                        """
                        UPDATE observers AS o SET last_used = GREATEST(o.last_used, u.last_used)
                        FROM unnest($1::text[], $2::float8[]) AS u (id, last_used)
                        WHERE o.id = u.id
                        """,
                        [Self.array(used.map(\.id)), Self.array(used.map { String($0.lastUsed) })])
                }
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// How long the journal is kept, seconds: an instance cut off for
    /// longer loads everything again.
    static let journalRetention = 600.0

    func pruneJournal(now: Double) throws {
        versionsSeen.append((now, try lastVersion()))
        guard let index = versionsSeen.lastIndex(where: { $0.time < now - Self.journalRetention }) else { return }
        let version = versionsSeen[index].version
        versionsSeen.removeFirst(index + 1)
        try query("DELETE FROM observable_journal WHERE version <= $1", [String(version)])
    }

    func expiredObservers(now: Double, grace: Double) throws -> [String] {
        let rows = try query("SELECT id FROM observers WHERE last_used + ttl_seconds + $1 < $2", [String(grace), String(now)])
        return (0..<rows.count).compactMap { rows.string($0, 0) }
    }
}
