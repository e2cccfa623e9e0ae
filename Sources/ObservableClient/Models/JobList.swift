import JSON
import Observation

/// The jobs (`/jobs`): every one oldest first, or, loaded with a page size, the
/// newest page first and older pages on demand.
public final class JobList: PagedList {
    /// The jobs loaded: every one in the order they were made, or, when
    /// loaded a page at a time, the pages loaded so far, newest first. New
    /// ones arrive at the end, or at the front when paged.
    public var jobs: [Job] { noteRead(0, \.jobs); return _jobs }
    /// True while older ones remain to be loaded with `loadMore()`.
    public var hasMore: Bool {
        registrar.access(self, keyPath: \.hasMore)
        return nextPage != nil
    }

    var _jobs: [Job] = []
    var nextPage: String? {
        didSet { if nextPage != oldValue { registrar.withMutation(of: self, keyPath: \.hasMore) {} } }
    }
    var pageSize: Int?
    var pages = 1
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
        if field == "jobs" { replace("", with: value.arrayValue ?? [], repaired: false) }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field.isEmpty, let client else { return }
        switch change.operation {
        case .insert:
            guard let new = change.new, let id = new.id, !_jobs.contains(id: id) else { return }
            let element = client.element(Job.self, new, parent: path)
            update(\.jobs, \._jobs, pageSize == nil ? _jobs + [element] : [element] + _jobs)
        case .remove:
            guard let id = change.old?.id else { return }
            update(\.jobs, \._jobs, _jobs.filter { $0.id != id })
            client.forget(Job.path(id: id, parent: path))
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let client else { return }
        let ordered = pageOrder(elements, repaired: repaired, current: _jobs.map(\.id))
        update(\.jobs, \._jobs, ordered.map { client.element(Job.self, $0, parent: path) })
    }

    func append(page elements: [JSONValue]) {
        guard let client else { return }
        let known = Set(_jobs.map(\.id))
        let added = elements.filter { !known.contains($0.id ?? "") }.map { client.element(Job.self, $0, parent: path) }
        update(\.jobs, \._jobs, _jobs + added)
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        guard let client, let next = nextPage else { return }
        try await client.loadPage(next, into: self)
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
