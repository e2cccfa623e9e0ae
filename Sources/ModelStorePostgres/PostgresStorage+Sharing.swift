import Concurrency
import JSON
import ModelObservation
import ModelStore
import PostgresClient
#if canImport(Glibc)
import Glibc
#endif

// What instances share beyond rows: the journal of what each transaction
// did, announcements of new versions and parked observers, saved cursors,
// claims on work; and how values are written as text.
extension PostgresStorage {
    // MARK: - The journal

    func journal(after version: Int64) throws -> [JournalEntry]? {
        // One statement, so one snapshot: the newest version and the
        // entries after `version` agree.
        let rows = try query(
            """
            SELECT c.version, j.version, j.kind, j.tbl, j.id, j.parent, j.first, j.last, j.body
            FROM observable_clock c LEFT JOIN observable_journal j ON j.version > $1
            WHERE c.id = 1 ORDER BY j.version, j.ordinal
            """,
            [String(version)])
        var entries: [JournalEntry] = []
        entries.reserveCapacity(rows.count)
        let newest = rows.count > 0 ? rows.int64(0, 0) ?? 0 : 0
        for row in 0..<rows.count where !rows.isNull(row, 1) {
            guard let kind = JournalEntry.Kind(rawValue: rows.string(row, 2) ?? "") else { continue }
            var entry = JournalEntry(version: rows.int64(row, 1) ?? 0, kind: kind)
            entry.table = Int(rows.int64(row, 3) ?? -1)
            entry.id = rows.string(row, 4) ?? ""
            entry.parent = rows.string(row, 5)
            entry.first = rows.int64(row, 6) ?? 0
            entry.last = rows.int64(row, 7) ?? 0
            entry.body = rows.string(row, 8)
            entries.append(entry)
        }
        // Versions are consecutive: a gap after `version` was pruned.
        if let first = entries.first, first.version != version + 1 { return nil }
        if entries.isEmpty && newest > version { return nil }
        return entries
    }

    func consistently<T>(_ body: () throws -> T) throws -> T {
        // An ordered transaction holds the lock every change takes: nothing moves.
        if inOrderedTransaction { return try body() }
        try run { try $0.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
        inSnapshot = true
        defer { inSnapshot = false }
        do {
            let result = try body()
            try run { try $0.execute("COMMIT") }
            return result
        } catch {
            if let connection = writerConnection, connection.isOpen { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    func newestVersion() throws -> Int64 {
        try probing { try $0.query("SELECT version FROM observable_clock WHERE id = 1").int64(0, 0) ?? 0 }
    }

    /// Runs `body` on the probe connection, opened (again) when needed.
    /// As with the writer, a connection found lost is opened again and
    /// `body` tried once more.
    private func probing<T>(_ body: (Connection) throws -> T) throws -> T {
        try probe.withLock { probe in
            while true {
                let reused = probe.connection?.isOpen == true
                if !reused {
                    probe.connection?.close()
                    probe.connection = nil
                    probe.connection = try probe.backoff.attempt { try Connection(url: url) }
                }
                do {
                    return try body(probe.connection!)
                } catch {
                    probe.connection?.close()
                    probe.connection = nil
                    guard reused, (error as? PostgresError)?.connectionLost == true else { throw Self.unreachable(error) }
                }
            }
        }
    }

    func awaitAnnouncement(timeout: Double) throws -> (newest: Int64?, parked: [ParkedAnnouncement]) {
        try listener.withLock { connection in
            do {
                if connection == nil || connection?.isOpen == false {
                    let opened = try Connection(url: url)
                    try opened.execute("LISTEN \(Self.channel); LISTEN \(Self.parkedChannel)")
                    connection = opened
                    // The database is back: the others need not wait out their backoff.
                    writerBackoff.withLock { $0 = Backoff() }
                    probe.withLock { $0.backoff = Backoff() }
                }
                let found = try connection!.notifications(waiting: timeout)
                var newest: Int64?
                var parked: [ParkedAnnouncement] = []
                for (channel, payload) in found {
                    if channel == Self.channel, let version = Int64(payload) {
                        newest = max(newest ?? version, version)
                    } else if channel == Self.parkedChannel {
                        // "instance observer", and " stream" after a stream's.
                        let parts = payload.split(separator: " ")
                        if parts.count >= 2 {
                            parked.append(ParkedAnnouncement(instance: String(parts[0]), observer: String(parts[1]),
                                                             stream: parts.count > 2 && parts[2] == "stream"))
                        }
                    }
                }
                return (newest, parked)
            } catch {
                connection?.close()
                connection = nil
                throw Self.unreachable(error)
            }
        }
    }

    func savedCursor(of id: String) throws -> Int64? {
        try probing { try $0.query("SELECT cursor FROM observers WHERE id = $1", [id]).int64(0, 0) }
    }

    /// One `UPDATE` for all: the polls one commit wakes on this instance.
    /// (A group of the saves of concurrent polls, as writes commit in
    /// groups, saved nothing measurable: an instance answers polls on one
    /// worker thread by default, so they rarely wait beside each other.)
    func saveCursors(_ cursors: [(id: String, cursor: Int64)]) throws {
        guard !cursors.isEmpty else { return }
        if cursors.count == 1 {
            try probing { try $0.query("UPDATE observers SET cursor = $2 WHERE id = $1", [cursors[0].id, String(cursors[0].cursor)]) }
            return
        }
        try probing {
            try $0.query(
                """
                UPDATE observers AS o SET cursor = u.cursor
                FROM unnest($1::text[], $2::bigint[]) AS u (id, cursor) WHERE o.id = u.id
                """,
                [Self.array(cursors.map(\.id)), Self.array(cursors.map { String($0.cursor) })])
        }
    }

    func announceParked(instance: String, observer: String, stream: Bool) throws {
        let payload = instance + " " + observer + (stream ? " stream" : "")
        try probing { try $0.query("SELECT pg_notify($1, $2)", [Self.parkedChannel, payload]) }
    }

    func claim(_ work: String) throws -> Bool {
        try claims.withLock { claims in
            do {
                if let held = claims[work], held.connection.isOpen {
                    if held.isHeld {
                        // Ours while the connection lives: check that it does.
                        try held.connection.query("SELECT 1")
                        return true
                    }
                } else {
                    claims[work]?.connection.close()
                    // Named for the work and the process, for whoever looks at pg_stat_activity.
                    claims[work] = (try Connection(url: url, applicationName: "observable-server \(work) \(getpid())"), false)
                }
                let key = Int64(bitPattern: Self.hash(work))
                let rows = try claims[work]!.connection.query("SELECT pg_try_advisory_lock($1)", [String(key)])
                claims[work]!.isHeld = rows.string(0, 0) == "t"
                return claims[work]!.isHeld
            } catch {
                claims[work]?.connection.close()
                claims[work] = nil
                return false
            }
        }
    }

    /// A stable hash (FNV-1a) of a claim's name: the same on every instance.
    private static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    func integrityCheck() throws -> String {
        _ = try query("SELECT 1")
        return "ok"
    }

    func close() {
        writerConnection?.close()
        writerConnection = nil
        probe.withLock { $0.connection?.close(); $0.connection = nil }
        listener.withLock { $0?.close(); $0 = nil }
        claims.withLock { claims in
            for (_, held) in claims { held.connection.close() }
            claims = [:]
        }
    }

    // MARK: - Values

    static func text(_ value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .bool(let bool): return bool ? "1" : "0"
        case .int(let int): return String(int)
        case .double(let double): return String(double)
        case .string(let string): return string
        case .array, .object: return JSONWriter.string(value)
        }
    }

    static func value(_ text: String?, _ kind: Field.Kind) -> JSONValue {
        guard let text else { return .null }
        switch kind {
        case .boolean: return .bool(text == "1" || text == "t" || text == "true")
        case .integer: return Int64(text).map(JSONValue.int) ?? .null
        case .number: return Double(text).map(JSONValue.double) ?? .null
        case .text: return .string(text)
        }
    }

    /// A PostgreSQL array literal of `values`, each quoted (nil is NULL).
    static func array(_ values: [String?]) -> String {
        var text = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { text += "," }
            guard let value else {
                text += "NULL"
                continue
            }
            text += "\""
            for character in value {
                if character == "\"" || character == "\\" { text.append("\\") }
                text.append(character)
            }
            text += "\""
        }
        return text + "}"
    }
}
