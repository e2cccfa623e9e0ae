import JSON
import Observation

/// The jobs (`/jobs`): every one oldest first, or, loaded with a page size, the
/// newest page first and older pages on demand.
public final class JobList: ElementList, @unchecked Sendable {
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
    static var elementsKey: KeyPath<JobList, [Job]> { \.jobs }
    static var storage: ReferenceWritableKeyPath<JobList, [Job]> { \._jobs }

    init(client: ObservableClient) {
        self.client = client
    }

    /// Loads the next older page (`GET` of the `Link` the last page
    /// answered), tracked like the first. Does nothing when `hasMore` is false.
    public func loadMore() async throws {
        try await loadNextPage()
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
        return try await create(.object(body))
    }
}
