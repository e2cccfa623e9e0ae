import JSON
import Observation

/// A job with progress (`/jobs/{id}`), advanced by the server or reported by clients.
public final class Job: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// How far the job has come, 0…`total`.
    public var current: Int { noteRead(0, \.current); return _current }
    /// Where the job ends.
    public var total: Int { noteRead(0, \.total); return _total }
    /// True once `current` reached `total`.
    public var isComplete: Bool { noteRead(1, \.isComplete); return _isComplete }
    /// `current` over `total`, 0…1.
    public var fractionCompleted: Double { total == 0 ? 0 : Double(current) / Double(total) }

    var _current = 0, _total = 0, _isComplete = false
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Job.allFields
    var freshAt: Int64 = -1
    static let fields = ["progress", "isComplete"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { "/jobs/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "progress":
            if let current = value["current"] { update(\.current, \._current, current.int) }
            if let total = value["total"] { update(\.total, \._total, total.int) }
        case "isComplete": update(\.isComplete, \._isComplete, value.bool)
        default: break
        }
    }

    var representation: JSONValue {
        ["id": .string(id), "progress": ["current": .int(Int64(_current)), "total": .int(Int64(_total))],
         "isComplete": .bool(_isComplete)]
    }

    /// Reports progress (`POST /jobs/{id}/progress`) of a job created without
    /// a step. Above `total` is clamped; below `current` is `.rejected`.
    public func report(current: Int) async throws {
        try await ObservableClient.write(client, "POST", path + "/progress", body: ["current": .int(Int64(current))])
    }

    /// Cancels the job (`DELETE /jobs/{id}` with `If-Match`).
    public func cancel() async throws {
        try await ObservableClient.write(client, "DELETE", path, ifMatch: representation)
    }
}
