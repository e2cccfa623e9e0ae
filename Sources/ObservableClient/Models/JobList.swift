import JSON
import Observation

/// The jobs (`/jobs`).
@MainActor
public final class JobList: CollectionOwner {
    /// Every one, in the order they were made.
    public var jobs: [Job] { noteRead(0, \.jobs); return _jobs }

    var _jobs: [Job] = []
    let path = "/jobs"
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = JobList.allFields
    var freshAt: Int64 = -1
    static let fields = ["jobs"]

    init(client: ObservableClient) {
        self.client = client
    }

    func set(_ field: String, _ value: JSONValue) {
        if field == "jobs" { replace("", with: value.arrayValue ?? []) }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_jobs.contains(id: id) else { return }
            update(\.jobs, \._jobs, _jobs + [client.element(Job.self, new, parent: path)])
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.jobs, \._jobs, _jobs.filter { $0.id != id })
            client.forget(Job.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue]) {
        guard let client else { return }
        update(\.jobs, \._jobs, elements.map { client.element(Job.self, $0, parent: path) })
    }

    /// Creates a job (`POST /jobs`) and returns it, tracked. With `step` and
    /// `interval` the server advances it by `step` every `interval`; without,
    /// clients report its progress (`Job.report(current:)`).
    public func create(total: Int, step: Int? = nil, interval: Duration? = nil) async throws -> Job {
        var body = JSONObject()
        body["total"] = .int(Int64(total))
        if let step { body["step"] = .int(Int64(step)) }
        if let interval {
            let (seconds, attoseconds) = interval.components
            body["intervalMs"] = .int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        }
        let created = try await ObservableClient.write(client, "POST", path, body: .object(body))
        return try await ObservableClient.created(client, Job.self, created, parent: path)
    }
}
