import JSON
import ModelObservation
import OrderedCollections
import SQLiteStore

/// A job with progress: advanced by the server every `intervalMs` by `step`,
/// or by clients reporting how far it has come.
public struct Job: Sendable, Equatable {
    public static let fields = ["id", "progress", "isComplete"]
    public static let totalRange: ClosedRange<Int64> = 1...1_000_000_000
    public static let intervalRange: ClosedRange<Int64> = 10...3_600_000

    public let id: String
    /// How far the job has come; never above `total`, never going back.
    public internal(set) var current: Int64
    public let total: Int64
    /// What the server adds every `intervalMs`; `nil` for a job whose
    /// progress clients report.
    public let step: Int64?
    public let intervalMs: Int64?
    let position: Int64

    public var path: String { Jobs.path + "/" + id }
    public var progressPath: String { path + "/progress" }
    public var isCompletePath: String { path + "/isComplete" }

    /// Computed: true once `current` has reached `total`. Since `current`
    /// never goes back, it turns true exactly once.
    public var isComplete: Bool { current >= total }

    public var isAdvancedByServer: Bool { step != nil }

    /// The value of `/jobs/{id}/progress`.
    public var progress: JSONValue { ["current": .int(current), "total": .int(total)] }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path)
        builder.constant("id", .string(id))
        builder.field("progress", progress, selection)
        builder.field("isComplete", .bool(isComplete), selection)
        return builder.finish()
    }
}

/// Every job, in creation order.
public struct Jobs: Sendable {
    public static let path = "/jobs"

    public internal(set) var all: PersistentOrderedDictionary<String, Job>
    var nextPosition: Int64

    public subscript(id: String) -> Job? { all[id] }

    public func list(_ selection: FieldSelection = .all) -> Representation {
        let elements = all.values.map { $0.representation(selection) }
        var reads = [PropertyKey(Self.path)]
        for element in elements { reads.append(contentsOf: element.reads) }
        return Representation(json: ["jobs": .array(elements.map(\.json))], reads: reads)
    }

    static func load(_ database: Database) throws -> Jobs {
        var all = PersistentOrderedDictionary<String, Job>()
        var maxPosition: Int64 = 0
        for row in try database.rows("SELECT id, position, current, total, step, interval_ms FROM jobs ORDER BY position") {
            let job = Job(id: row[0].string ?? "", current: row[2].int64 ?? 0, total: row[3].int64 ?? 1,
                          step: row[4].int64, intervalMs: row[5].int64, position: row[1].int64 ?? 0)
            all[job.id] = job
            maxPosition = max(maxPosition, job.position)
        }
        return Jobs(all: all, nextPosition: maxPosition + 1)
    }
}
