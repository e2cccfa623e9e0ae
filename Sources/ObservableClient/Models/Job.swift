import JSON

/// A job with progress (`/jobs/{id}`), advanced by the server or reported by clients.
@RemoteModel("/jobs/{id}")
public final class Job {
    /// The server's id, which never changes.
    public let id: String
    /// How far the job has come, and where it ends.
    public var progress: Progress
    /// True once `current` reached `total`.
    public var isComplete: Bool

    /// How far a job has come (`progress`).
    public struct Progress: RemoteValue, RemoteDefaultValue, Sendable {
        /// 0…`total`.
        public var current: Int
        /// Where the job ends.
        public var total: Int

        public init(current: Int, total: Int) {
            self.current = current
            self.total = total
        }

        public init?(remoteJSON: JSONValue) {
            guard let current = remoteJSON["current"].flatMap(Int.init(remoteJSON:)),
                  let total = remoteJSON["total"].flatMap(Int.init(remoteJSON:))
            else { return nil }
            self.init(current: current, total: total)
        }

        public var remoteJSON: JSONValue { ["current": current.remoteJSON, "total": total.remoteJSON] }
        public static var remoteDefault: Progress { Progress(current: 0, total: 0) }
    }

    /// How far the job has come, 0…`total` (`progress.current`).
    public var current: Int { progress.current }
    /// Where the job ends (`progress.total`).
    public var total: Int { progress.total }
    /// `current` over `total`, 0…1.
    public var fractionCompleted: Double { total == 0 ? 0 : Double(current) / Double(total) }

    /// Reports progress (`POST /jobs/{id}/progress`) of a job created without
    /// a step. Above `total` is clamped; below `current` is `.rejected`.
    public func report(current: Int) async throws {
        try await ObservableClient.write(client, "POST", path + "/progress", body: ["current": .int(Int64(current))])
    }

    /// Cancels the job (`DELETE /jobs/{id}` with `If-Match`).
    public func cancel() async throws {
        try await delete()
    }
}
