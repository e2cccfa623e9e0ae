import DequeModule
import HeapModule

extension RegistryCore {
    struct State {
        var observers: [ObserverKey: ObserverSnapshot] = [:]
        var waiters: [ObserverKey: ChangeWaiter] = [:]
        /// Key → the observers that read it, each with the `seq` it read it
        /// at (the same as in its reads): a change finds its receivers here
        /// without looking each one up. Appended to, never searched: an
        /// entry whose observer has since cleared its reads or gone is
        /// passed over (`Slots`), and dropped when such entries pile up.
        var index: [PropertyKey: Readers] = [:]
        /// Collection path → the shapes read of it (`ShapeIndex`): a
        /// change finds the readers of the windows that hold it there.
        var shapeIndex: [String: ShapeIndex] = [:]
        var slots = Slots()
        var log = Deque<Change>()
        /// What the changes in `log` weigh (`Change.weight`).
        var logBytes = 0
        var lastSeq: Int64 = 0
        /// Changes up to this `seq` are no longer kept.
        var prunedThrough: Int64 = 0
        var dirty: Set<ObserverKey> = []
        /// Each observer once, by the time it could expire at the earliest
        /// (its last use and TTL when it was queued): `expire` looks only
        /// at those due, where a walk of every observer held the lock for
        /// milliseconds at hundreds of thousands. One used since is queued
        /// again at its new time; one gone is passed over.
        var expiries = Heap<Expiry>()
        /// Per observer, the seqs of the changes it receives, appended at
        /// publish time through the reverse index, so a poll reads its own
        /// short list instead of scanning the log.
        var inboxes: [ObserverKey: Inbox] = [:]
        /// Observers per owner (`ObserverSnapshot.owner`).
        var owners: [String: Int] = [:]
        /// The bytes all this holds, estimated as they come and go.
        var memory = MemoryEstimate()

        /// Marks the observer at `position` used `now`; it is saved at the
        /// next housekeeping when `saving` or when its saved use is stale.
        mutating func use(at position: Dictionary<ObserverKey, ObserverSnapshot>.Index, now: Double, saving: Bool = false) {
            let stale = observers.inPlace(at: position) { observer in
                observer.lastUsed = now
                return observer.useIsStale(now: now)
            }
            if saving || stale { dirty.insert(observers.keys[position]) }
        }

        /// The observers a change to `key` at `seq` reaches: those that read
        /// `key` before it.
        func readers(of key: PropertyKey, before seq: Int64) -> [ObserverKey] {
            guard let readers = index[key] else { return [] }
            var found: [ObserverKey] = []
            found.reserveCapacity(readers.entries.count - readers.dead)
            for entry in readers.entries where entry.seq < seq {
                if let id = slots.observer(entry.slot, entry.epoch) { found.append(id) }
            }
            for number in readers.groups {
                guard let group = groups[Int(number)], group.seq < seq else { continue }
                for member in group.members {
                    if let id = slots.observer(member.slot, member.epoch) { found.append(id) }
                }
            }
            return found
        }

        /// Appends the observers `change` at `place` reaches through the
        /// shapes they read before it (an observer may be named twice:
        /// `publish` takes that).
        func readers(of place: Place, in change: Change, into found: inout [ObserverKey]) {
            guard let shapes = shapeIndex[place.collection] else { return }
            let seq = change.seq
            func add(_ entry: ShapeEntry) {
                if entry.group >= 0 {
                    guard let group = groups[Int(entry.group)] else { return }
                    for member in group.members {
                        if let id = slots.observer(member.slot, member.epoch) { found.append(id) }
                    }
                } else if let id = slots.observer(entry.slot, entry.epoch) {
                    found.append(id)
                }
            }
            shapes.forEach(holding: place.position) { entry in
                guard entry.seq < seq, entry.shape.covers(place) else { return }
                add(entry)
            }
            // A query's reader only where it hears something of the change.
            guard shapes.hasQueries, let states = ElementStates(change, at: place) else { return }
            shapes.forEachQuery(states) { entry in
                guard entry.seq < seq, entry.shape.effect(of: change, at: place, states) != nil else { return }
                add(entry)
            }
        }

        /// Indexes every read of the observer at `position`.
        mutating func index(at position: Dictionary<ObserverKey, ObserverSnapshot>.Index) {
            let observer = observers.values[position]
            let slot = observer.slot
            let epoch = slots.epoch(of: slot)
            for (key, readAt) in observer.reads where !key.isShape {
                index[key, default: Readers()].entries.append(Reader(slot: slot, epoch: epoch, seq: readAt))
            }
            for read in observer.shapes { index(read.shape, at: read.seq, slot: slot, epoch: epoch) }
        }

        /// Indexes a read of `key` at `seq` by the observer in `slot`.
        mutating func index(_ key: PropertyKey, at seq: Int64, slot: Int32, epoch: UInt32) {
            if key.isShape, let shape = Shape(key: key) {
                index(shape, at: seq, slot: slot, epoch: epoch)
            } else {
                index[key, default: Readers()].entries.append(Reader(slot: slot, epoch: epoch, seq: seq))
            }
        }

        mutating func index(_ shape: Shape, at seq: Int64, slot: Int32, epoch: UInt32, group: Int32 = -1) {
            shapeIndex[shape.collection, default: ShapeIndex()].insert(ShapeEntry(slot: slot, epoch: epoch, group: group, seq: seq, shape: shape))
        }

        /// Counts a shape's entry as stale; drops the stale ones of its
        /// collection when they are half of them.
        mutating func unindex(_ shape: Shape) {
            guard let position = shapeIndex.index(forKey: shape.collection) else { return }
            shapeIndex.values[position].dead += 1
            let shapes = shapeIndex.values[position]
            if shapes.dead >= shapes.count {
                compact(shapesOf: shape.collection)
            } else if shapes.dead >= 32 && shapes.dead * 2 > shapes.count {
                compact(shapesOf: shape.collection)
            }
        }

        /// Drops the entries of `collection`'s shapes whose observer has
        /// gone or forgotten its reads, and those of groups gone.
        mutating func compact(shapesOf collection: String) {
            let slots = slots, groups = groups
            shapeIndex[collection]?.removeAll { entry in
                entry.group >= 0 ? groups[Int(entry.group)] == nil : slots.observer(entry.slot, entry.epoch) == nil
            }
            if shapeIndex[collection]?.isEmpty == true { shapeIndex[collection] = nil }
        }

        /// Queues every observer for expiry anew once the queue holds more
        /// than twice as many entries as there are observers: those of
        /// observers removed stay until they are due, and where expiry is
        /// decided by the database (several instances) nothing takes them.
        mutating func requeueIfStale() {
            guard expiries.count > 2 * observers.count + 1024 else { return }
            expiries = Heap(observers.map { Expiry(at: $0.value.lastUsed + Double($0.value.ttlSeconds), $0.key) })
        }

        /// Gives a new observer its slot and indexes its reads.
        mutating func insert(_ observer: ObserverSnapshot) {
            let id = ObserverKey(observer.id)
            var observer = observer
            if let old = observers[id] {
                unindex(old, releasing: true)
                forget(old)
            }
            observer.slot = slots.take(id)
            observer.group = -1
            observer.shapes = ObserverSnapshot.shapes(in: observer.reads)
            observer.ownsReads = true
            observer.bytes = MemoryEstimate.observer + MemoryEstimate.reads(observer.reads.keys)
            memory.observers += observer.bytes
            if let owner = observer.owner { observer.owner = count(owner) }
            observers[id] = observer
            replaceInbox(of: id, with: Inbox(floor: lastSeq))
            expiries.insert(Expiry(at: observer.lastUsed + Double(observer.ttlSeconds), id))
            index(at: observers.index(forKey: id)!)
        }

        /// Takes away what an observer removed held: its bytes, its place
        /// in its owner's count. (Its inbox goes with `replaceInbox`.)
        mutating func forget(_ observer: ObserverSnapshot) {
            memory.observers -= observer.bytes
            if let owner = observer.owner, let position = owners.index(forKey: owner) {
                if owners.values[position] > 1 { owners.values[position] -= 1 } else { owners.remove(at: position) }
            }
        }

        /// Counts one more observer of `owner`; returns the owner as kept,
        /// one copy of it for all its observers.
        mutating func count(_ owner: String) -> String {
            if let position = owners.index(forKey: owner) {
                owners.values[position] += 1
                return owners.keys[position]
            }
            owners[owner] = 1
            return owner
        }

        /// Makes `inbox` observer `id`'s (none when nil), counting the seqs
        /// of the one it replaces out.
        mutating func replaceInbox(of id: ObserverKey, with inbox: Inbox?) {
            let old = inbox.map { inboxes.updateValue($0, forKey: id) } ?? inboxes.removeValue(forKey: id)
            memory.inboxEntries += (inbox?.seqs.count ?? 0) - (old?.seqs.count ?? 0)
        }

        /// Counts `bytes` more (or fewer) for the observer at `position`.
        @inline(__always)
        mutating func charge(_ bytes: Int, at position: Dictionary<ObserverKey, ObserverSnapshot>.Index) {
            observers.values[position].bytes += bytes
            memory.observers += bytes
        }

        /// Charges the observer at `position`, about to read more, for the
        /// copy of its group's table it is about to make (once).
        @inline(__always)
        mutating func ownReads(at position: Dictionary<ObserverKey, ObserverSnapshot>.Index) {
            guard !observers.values[position].ownsReads else { return }
            observers.values[position].ownsReads = true
            charge(observers.values[position].reads.count * MemoryEstimate.copiedRead, at: position)
        }

        /// What reading `keys` would add to the estimate for the observer
        /// at `position`: each key, and the copy of a table it shares.
        func cost(of keys: [(PropertyKey, Int64)], at position: Dictionary<ObserverKey, ObserverSnapshot>.Index) -> Int {
            let observer = observers.values[position]
            var bytes = observer.ownsReads ? 0 : observer.reads.count * MemoryEstimate.copiedRead
            for (key, _) in keys { bytes += MemoryEstimate.read(key) }
            return bytes
        }

        /// Counts the observer's entries as stale; with `releasing`, its
        /// slot is given up, else it keeps it with its reads forgotten.
        mutating func unindex(_ observer: ObserverSnapshot, releasing: Bool) {
            let grouped = observer.group >= 0 ? groups[Int(observer.group)]?.reads : nil
            var shapesLeft: [Shape] = []
            for key in observer.reads.keys {
                // A key of its group has no entry of its own.
                if let grouped, grouped[key] != nil { continue }
                if key.isShape {
                    if let shape = Shape(key: key) { shapesLeft.append(shape) }
                    continue
                }
                guard let position = index.index(forKey: key) else { continue }
                index.values[position].dead += 1
                let readers = index.values[position]
                if readers.dead == readers.entries.count && readers.groups.isEmpty {
                    index.remove(at: position)
                } else if readers.dead >= 32 && readers.dead * 2 > readers.entries.count {
                    stale.insert(key)
                }
            }
            if releasing { slots.release(observer.slot) } else { slots.renew(observer.slot) }
            for shape in shapesLeft { unindex(shape) }
            if observer.group >= 0 { leave(observer.group) }
            for key in stale {
                guard let position = index.index(forKey: key) else { continue }
                let slots = slots
                index.values[position].entries.removeAll { slots.observer($0.slot, $0.epoch) == nil }
                index.values[position].dead = 0
            }
            stale.removeAll(keepingCapacity: true)
        }

        /// Counts one member of group `number` as stale (its slot's epoch
        /// has moved on): the group goes with its last member, and drops its
        /// stale members when they are half of it.
        mutating func leave(_ number: Int32) {
            guard var group = groups[Int(number)] else { return }
            group.dead += 1
            if group.dead == group.members.count {
                for key in group.reads.keys {
                    if key.isShape {
                        if let shape = Shape(key: key) {
                            shapeIndex[shape.collection]?.removeAll { $0.group == number }
                            if shapeIndex[shape.collection]?.isEmpty == true { shapeIndex[shape.collection] = nil }
                        }
                        continue
                    }
                    guard let position = index.index(forKey: key) else { continue }
                    index.values[position].groups.removeAll { $0 == number }
                    let readers = index.values[position]
                    if readers.groups.isEmpty && readers.dead == readers.entries.count { index.remove(at: position) }
                }
                groups[Int(number)] = nil
                freeGroups.append(number)
                memory.groups -= group.reads.count * MemoryEstimate.groupRead
                if firstReads?.group == number { firstReads = nil }
                return
            }
            groups[Int(number)] = nil  // uniquely referenced while it changes
            if group.dead >= 32 && group.dead * 2 > group.members.count {
                let slots = slots
                group.members.removeAll { slots.observer($0.slot, $0.epoch) == nil }
                group.dead = 0
            }
            groups[Int(number)] = group
        }

        /// Makes a group of the observers whose first read added the keys
        /// of `reads` at `seq`; returns its number.
        mutating func makeGroup(_ reads: [PropertyKey: Int64], seq: Int64) -> Int32 {
            let group = Group(reads: reads, seq: seq)
            let number: Int32
            if let free = freeGroups.popLast() {
                number = free
                groups[Int(number)] = group
            } else {
                number = Int32(groups.count)
                groups.append(group)
            }
            memory.groups += reads.count * MemoryEstimate.groupRead
            for key in reads.keys {
                if key.isShape, let shape = Shape(key: key) {
                    index(shape, at: seq, slot: -1, epoch: 0, group: number)
                } else {
                    index[key, default: Readers()].groups.append(number)
                }
            }
            return number
        }

        /// Gives the observer at `position`, which has read nothing, the
        /// reads of the last first read, which were the same keys at the
        /// same `seq`: it shares their table and joins their group (made by
        /// the second observer to read the same).
        mutating func joinFirstRead(at position: Dictionary<ObserverKey, ObserverSnapshot>.Index, slot: Int32, epoch: UInt32) {
            guard var first = firstReads, let seq = first.seq else { return }
            if first.group < 0 {
                first.group = makeGroup(first.reads, seq: seq)
                firstReads = first
            }
            observers.values[position].reads = first.reads
            observers.values[position].shapes = first.shapes
            observers.values[position].group = first.group
            observers.values[position].ownsReads = false
            charge(MemoryEstimate.member, at: position)
            groups[Int(first.group)]!.members.append(Member(slot: slot, epoch: epoch))
        }

        /// The reads of the last observer whose first read was tracked, what
        /// that read added, and the group of the observers that read the
        /// same (-1 until a second one did): the next observer reading the
        /// same at the same `seq` shares the table (copy-on-write, copied
        /// only when one of them reads more) and joins the group.
        var firstReads: FirstRead?
        /// Observers whose first read added the same keys at the same
        /// `seq`: indexed once for all, each member 8 bytes, where each
        /// would add an entry to the readers of every key.
        var groups: [Group?] = []
        var freeGroups: [Int32] = []

        /// Keys whose stale entries are to be dropped (scratch space).
        var stale: Set<PropertyKey> = []

        /// The changes `observer` receives after `since` (no older than the
        /// oldest kept), at most `limit` unless that would split a
        /// transaction, and the cursor after them; read off its `inbox`
        /// where that reaches back to `since`.
        func page(_ observer: ObserverSnapshot, inbox: Inbox?, after since: Int64, limit: Int) -> (changes: [Change], cursor: Int64) {
            var found: [Change] = []
            var cursor = lastSeq
            let firstSeq = log.first?.seq ?? (lastSeq + 1)
            if let inbox, since >= inbox.floor {
                for seq in inbox.seqs where seq > since {
                    let change = log[Int(seq - firstSeq)]
                    if found.count >= limit, let last = found.last, change.transaction != last.transaction {
                        cursor = change.seq - 1
                        break
                    }
                    observer.said(change, into: &found)
                }
            } else {
                var position = max(0, Int(since + 1 - firstSeq))
                while position < log.count {
                    let change = log[position]
                    position += 1
                    if found.count >= limit, let last = found.last, change.transaction != last.transaction {
                        cursor = change.seq - 1
                        break
                    }
                    if observer.receives(change) { observer.said(change, into: &found) }
                }
            }
            return (found, cursor)
        }
    }
}
