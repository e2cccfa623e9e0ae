#if canImport(Glibc)
import Glibc
#endif

/// A fault planted on purpose, named by the environment variable
/// `OBSERVABLE_PLANTED_FAULT`, so that the precision checker
/// (`scripts/precision-check`) can show that it notices each kind of
/// imprecision. Unset, as in every real deployment, nothing changes.
public enum PlantedFault: String, Sendable, CaseIterable {
    /// An insert no longer makes its element's properties read by the
    /// collection's readers: later changes to them are missed.
    case dropImpliedReads = "drop-implied-reads"
    /// The cursor last answered is never saved nor shared: a restart or
    /// another instance goes on from an older one, and repeats.
    case forgetCursor = "forget-cursor"
    /// Every commit answers every parked poll, empty when nothing it read
    /// changed.
    case wakeEveryPoll = "wake-every-poll"
    /// A shape's fields are not looked at: a reader of some fields of a
    /// collection hears sets of the others too.
    case ignoreShapeFields = "ignore-shape-fields"
    /// A page's window ends one position before its last element: a set
    /// or a remove of that element is missed.
    case narrowPageWindow = "narrow-page-window"
    /// A write that moves an element out of a query's filter or window
    /// says no `remove` to the query's reader: its copy keeps it.
    case queryMissesRemove = "query-misses-remove"

    /// The fault this process runs with, read once.
    public static let current: PlantedFault? = {
        guard let value = getenv("OBSERVABLE_PLANTED_FAULT") else { return nil }
        return PlantedFault(rawValue: String(cString: value))
    }()
}
