/// One reader of a key in the reverse index: the observer's slot, the
/// slot's epoch when the read was indexed, and the read's `seq`.
struct Reader {
    var slot: Int32
    var epoch: UInt32
    var seq: Int64
}

/// The readers of one key, `dead` of which are stale, and the groups
/// whose members read it.
struct Readers {
    var entries: [Reader] = []
    var dead = 0
    var groups: [Int32] = []
}
