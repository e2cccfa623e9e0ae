import Glibc
import ModelObservation
import ModelStore

/// Observers' reads, appended to a file mapped into memory beside the
/// SQLite database, then folded into the database in large transactions.
///
/// A read lands in the file with one copy of its bytes: the page is the
/// file's page in the kernel's cache, so a `kill -9` after the copy loses
/// nothing, as a commit with `synchronous=normal` loses nothing (neither
/// survives the machine losing power before the kernel writes them out).
/// Storing each read in its own commit cost tens of microseconds of work on
/// the committing thread; this is a copy of a few hundred bytes, made by
/// the thread that answers the read.
///
/// Two files take turns: reads go to the active one; a fold makes the
/// other one active, copies the now idle one into the database and empties
/// it. A file starts with its generation (8 bytes); each record is
/// `length` (4 bytes), a checksum of the payload and the generation (4
/// bytes), then the payload: the read's `seq` (8 bytes), the length of the
/// observer's id (2 bytes), the number of its set of keys in this file (4
/// bytes), the id (UTF-8), and the keys joined by newlines, only where the
/// set first appears in the file: most reads are of the same keys as the
/// read before them (every new observer reading `/truck`), and their
/// records name the set instead (some 60 bytes rather than 360). The
/// length is written last, so a record cut short by a crash, or garbage,
/// ends the file. Emptying a file moves its generation on, which ends it
/// at its first record: its pages are written again, not given back and
/// faulted in anew.
///
/// Files of an earlier release held no set numbers; their records, told
/// apart by their checksum's seed, are read as they were written.
///
/// `append` and `swap` are called under the registry's lock; the idle
/// file is read and emptied under the store's writer lock.
final class ReadJournal: @unchecked Sendable {
    static let initialCapacity = 4 << 20
    /// A fold is due once the active file holds this much: folded often,
    /// the two files stay small and their pages are written again rather
    /// than new ones faulted in.
    static let foldThreshold = 1 << 20

    private var files: [File]
    private var activeIndex = 0
    /// How far the idle file has been folded.
    private var folded = File.headerSize

    /// Opens (creating when missing) the two files named `path-1` and
    /// `path-2`, taking a lock on the first: one server at a time.
    init(path: String) throws {
        let first = try File(path: path + "-1", locking: true)
        files = [first, try File(path: path + "-2", locking: false)]
    }

    var activeSize: Int { files[activeIndex].end }
    var idleIsEmpty: Bool { files[1 - activeIndex].end == 0 }

    /// Whether the active file passed the threshold since it became active
    /// (so that the folding thread is woken once for it).
    private(set) var foldAsked = false

    /// Whether to wake the folding thread now: the first time the active
    /// file holds `foldThreshold`.
    func askFold() -> Bool {
        guard !foldAsked, activeSize >= Self.foldThreshold else { return false }
        foldAsked = true
        return true
    }

    /// Every record of both files: what a crash left behind.
    func recovered() -> [JournaledRead] {
        files.flatMap { file in
            var position = File.headerSize
            return file.records(from: &position, limit: .max)
        }
    }

    /// Appends the reads of one observer, one record for each `seq`.
    func append(_ reads: [ObserverReads]) throws {
        for read in reads where !read.keys.isEmpty {
            try files[activeIndex].append(read)
        }
    }

    /// Makes the idle file the active one. Only when it is empty.
    func swap() {
        precondition(idleIsEmpty, "the idle read journal is folded before it becomes active")
        activeIndex = 1 - activeIndex
        folded = File.headerSize
        foldAsked = false
    }

    /// The next at most `limit` records of the idle file not folded yet,
    /// and where they end (for `folded(through:)` once they are stored).
    func nextIdle(limit: Int) -> (reads: [JournaledRead], end: Int) {
        var end = folded
        let reads = files[1 - activeIndex].records(from: &end, limit: limit)
        return (reads, end)
    }

    /// Marks the idle file's records up to `end` as stored.
    func folded(through end: Int) {
        folded = end
    }

    /// Empties the idle file once every record of it is folded.
    func resetIdle() throws {
        try files[1 - activeIndex].reset()
        folded = File.headerSize
    }

    /// Closes both files, and removes them with `removing` (when every
    /// record in them is stored).
    func close(removing: Bool) {
        for file in files { file.close(removing: removing) }
    }

    /// Empties both files: everything in them is stored elsewhere.
    func resetAll() throws {
        for file in files { try file.reset() }
        folded = File.headerSize
    }

    /// Another server holds the journal's lock: it has the database open.
    struct InUse: Error, CustomStringConvertible {
        let path: String
        var description: String { "\(path) is locked: another server has this database open" }
    }

    /// A multiply-and-rotate hash of `bytes`, eight at a time, seeded
    /// with the file's generation: a record of an earlier one fails it.
    static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt32 {
        let prime: UInt64 = 0x9E37_79B9_7F4A_7C15
        var hash = (seed &+ UInt64(bytes.count)) &* prime
        var at = 0
        while at + 8 <= bytes.count {
            hash = ((hash ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))) &* prime)
            hash = (hash << 31) | (hash >> 33)
            at += 8
        }
        while at < bytes.count {
            hash = (hash ^ UInt64(bytes[at])) &* prime
            at += 1
        }
        hash ^= hash >> 29
        return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
    }

    private final class File {
        let path: String
        let descriptor: Int32
        private var base: UnsafeMutableRawPointer?
        private var capacity = 0
        static let headerSize = 8
        private var closed = false
        /// Where the next record goes; only known after a reset (recovery
        /// reads the records, then resets).
        private var next = headerSize
        /// The last set of keys appended and its number, and how many sets
        /// the file holds: a read of the same keys names the set.
        private var lastKeys: [PropertyKey] = []
        private var lastShape: UInt32 = 0
        private var shapeCount: UInt32 = 0
        /// The sets of keys met while reading the file, by number, their
        /// paths joined (reads of one set share the string).
        private var shapesRead: [UInt32: String] = [:]
        /// Records of this format are checksummed with the generation plus
        /// this; those of the format before, with the generation alone.
        static let formatSeed: UInt64 = 2 << 56
        /// Bytes of records.
        var end: Int { next - Self.headerSize }
        private var generation: UInt64 {
            base.map { UInt64(littleEndian: $0.load(as: UInt64.self)) } ?? 0
        }

        init(path: String, locking: Bool) throws {
            self.path = path
            // The descriptor is closed by `deinit` alone, which also runs
            // when this throws after it is set: closed here too, it would be
            // closed twice, the second time perhaps another thread's new
            // descriptor (a connection's socket).
            descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw Self.error("cannot open \(path)") }
            if locking && flock(descriptor, LOCK_EX | LOCK_NB) != 0 { throw InUse(path: path) }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { throw Self.error("cannot read \(path)") }
            try map(capacity: max(Int(status.st_size), ReadJournal.initialCapacity))
            if status.st_size == 0 { base!.storeBytes(of: UInt64(1).littleEndian, as: UInt64.self) }
        }

        static func error(_ message: String) -> ModelError {
            ModelError(.unavailable, "\(message): \(String(cString: strerror(errno)))")
        }

        /// Reserves the file's blocks up to `capacity` (so that writing the
        /// mapping never meets a full disk) and maps it.
        private func map(capacity: Int) throws {
            let reserved = posix_fallocate(descriptor, 0, off_t(capacity))
            guard reserved == 0 else {
                errno = reserved
                throw Self.error("cannot reserve \(capacity) bytes for \(path)")
            }
            if let base { munmap(base, self.capacity) }
            base = nil
            self.capacity = 0
            guard let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED else {
                throw Self.error("cannot map \(path)")
            }
            base = mapped
            self.capacity = capacity
        }

        func append(_ read: ObserverReads) throws {
            let end = next
            let id = read.observer.utf8
            // The same keys as the record before: named, not written.
            let sameKeys = shapeCount > 0 && read.keys == lastKeys
            var payload = 8 + 2 + 4 + id.count
            if !sameKeys {
                for key in read.keys { payload += key.path.utf8.count + 1 }
                payload -= 1
            }
            guard id.count <= Int(UInt16.max), payload <= Int(UInt32.max) else {
                throw ModelError.unprocessable("a read too large to store")
            }
            let size = 8 + payload
            if end + size + 4 > capacity {
                var grown = capacity * 2
                while end + size + 4 > grown { grown *= 2 }
                try map(capacity: grown)
            }
            guard let base else { throw ModelError(.unavailable, "the read journal is closed") }
            let shape = sameKeys ? lastShape : shapeCount
            let record = base + end
            var at = 8
            record.storeBytes(of: read.seq.littleEndian, toByteOffset: at, as: Int64.self)
            at += 8
            record.storeBytes(of: UInt16(id.count).littleEndian, toByteOffset: at, as: UInt16.self)
            at += 2
            record.storeBytes(of: shape.littleEndian, toByteOffset: at, as: UInt32.self)
            at += 4
            at = Self.copy(id, to: record + at) - record
            if !sameKeys {
                for (offset, key) in read.keys.enumerated() {
                    if offset > 0 {
                        record.storeBytes(of: UInt8(ascii: "\n"), toByteOffset: at, as: UInt8.self)
                        at += 1
                    }
                    at = Self.copy(key.path.utf8, to: record + at) - record
                }
            }
            let checksum = ReadJournal.checksum(UnsafeRawBufferPointer(start: record + 8, count: payload), seed: generation &+ Self.formatSeed)
            record.storeBytes(of: checksum.littleEndian, toByteOffset: 4, as: UInt32.self)
            // Last: until it is written, the record is not there.
            record.storeBytes(of: UInt32(payload).littleEndian, toByteOffset: 0, as: UInt32.self)
            next += size
            if !sameKeys {
                lastKeys = read.keys
                lastShape = shapeCount
                shapeCount += 1
            }
        }

        private static func copy(_ text: String.UTF8View, to destination: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
            let copied = text.withContiguousStorageIfAvailable { bytes in
                destination.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                return bytes.count
            }
            if let copied { return destination + copied }
            // A small string (up to 15 bytes) is kept inside its value:
            // copied from a copy of it that is contiguous.
            var text = String(text)
            return text.withUTF8 { bytes in
                destination.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                return destination + bytes.count
            }
        }

        /// Up to `limit` whole records from `position`, which moves past them.
        func records(from position: inout Int, limit: Int) -> [JournaledRead] {
            guard let base else { return [] }
            let generation = generation
            var found: [JournaledRead] = []
            while found.count < limit, position + 8 <= capacity {
                let record = base + position
                let payload = Int(UInt32(littleEndian: record.loadUnaligned(as: UInt32.self)))
                guard payload >= 10, position + 8 + payload <= capacity else { break }
                let bytes = UnsafeRawBufferPointer(start: record + 8, count: payload)
                let checksum = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                let read: JournaledRead?
                if checksum == ReadJournal.checksum(bytes, seed: generation &+ Self.formatSeed) {
                    read = self.read(bytes)
                } else if checksum == ReadJournal.checksum(bytes, seed: generation) {
                    read = Self.readEarlierFormat(bytes)
                } else {
                    read = nil
                }
                guard let read else { break }
                found.append(read)
                position += 8 + payload
            }
            return found
        }

        /// A record's payload: its keys written out (the first of its set
        /// in the file) or the number of a set met before.
        private func read(_ bytes: UnsafeRawBufferPointer) -> JournaledRead? {
            guard bytes.count >= 14 else { return nil }
            let seq = Int64(littleEndian: bytes.loadUnaligned(as: Int64.self))
            let idCount = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)))
            let shape = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 10, as: UInt32.self))
            guard 14 + idCount <= bytes.count else { return nil }
            let id = String(decoding: bytes[14..<(14 + idCount)], as: UTF8.self)
            let paths: String
            if 14 + idCount < bytes.count {
                paths = String(decoding: bytes[(14 + idCount)...], as: UTF8.self)
                shapesRead[shape] = paths
            } else {
                guard let known = shapesRead[shape] else { return nil }
                paths = known
            }
            return JournaledRead(observer: id, seq: seq, paths: paths)
        }

        /// A record of the earlier format: `seq`, the id, then the keys.
        private static func readEarlierFormat(_ bytes: UnsafeRawBufferPointer) -> JournaledRead? {
            let seq = Int64(littleEndian: bytes.loadUnaligned(as: Int64.self))
            let idCount = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)))
            guard 10 + idCount <= bytes.count else { return nil }
            let id = String(decoding: bytes[10..<(10 + idCount)], as: UTF8.self)
            let paths = String(decoding: bytes[(10 + idCount)...], as: UTF8.self)
            return JournaledRead(observer: id, seq: seq, paths: paths)
        }

        /// Empties the file: its generation moves on, so the records in it
        /// are no longer its own.
        func reset() throws {
            guard let base else { throw ModelError(.unavailable, "the read journal is closed") }
            base.storeBytes(of: (generation &+ 1).littleEndian, as: UInt64.self)
            next = Self.headerSize
            lastKeys = []
            shapeCount = 0
            shapesRead = [:]
        }

        func close(removing: Bool) {
            guard !closed else { return }
            closed = true
            if let base { munmap(base, capacity) }
            base = nil
            capacity = 0
            if removing { unlink(path) }
            Glibc.close(descriptor)
        }

        deinit {
            close(removing: false)
        }
    }
}

/// One record of the read journal: an observer's reads at one `seq`, the
/// keys' paths joined by newlines, as the database stores them.
struct JournaledRead {
    let observer: String
    let seq: Int64
    let paths: String
}
