extension RegistryCore {
    /// The seqs of the changes one observer receives after `floor`. A poll
    /// from before `floor` scans the log instead (after a restart, or when
    /// a read lands after changes it should have seen).
    struct Inbox {
        var seqs: [Int64] = []
        var floor: Int64

        init(floor: Int64) {
            self.floor = floor
        }

        /// Forgets entries up to `seq`: a poll from `seq` acknowledged them.
        mutating func acknowledge(through seq: Int64) {
            guard seq > floor else { return }
            if let first = seqs.firstIndex(where: { $0 > seq }) {
                seqs.removeFirst(first)
            } else {
                seqs.removeAll(keepingCapacity: true)
            }
            floor = seq
        }
    }
}
