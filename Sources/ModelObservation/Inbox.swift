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

        /// Most seqs an inbox holds: one that would hold more starts again
        /// from the change that passed it, and a poll from before that
        /// scans the log (as after a restart). An observer that never polls
        /// holds at most this many, whatever it receives until its TTL.
        static let limit = 4096

        /// Most seqs an inbox holds while the registry's estimate is past its
        /// cap (`maxBytes`): under a write that reaches every observer, the
        /// inboxes of those that do not poll start again at this size, so
        /// the backlog they keep is at most this many seqs each, and a poll
        /// from before scans the log.
        static let limitPastCap = 16

        /// Forgets entries up to `seq`: a poll from `seq` acknowledged them.
        /// Returns how many it forgot.
        @discardableResult
        mutating func acknowledge(through seq: Int64) -> Int {
            guard seq > floor else { return 0 }
            let count = seqs.count
            if let first = seqs.firstIndex(where: { $0 > seq }) {
                seqs.removeFirst(first)
            } else {
                seqs.removeAll(keepingCapacity: true)
            }
            floor = seq
            return count - seqs.count
        }
    }
}
