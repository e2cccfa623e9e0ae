/// A connection suspended until its answer is ready (see `Connection.suspend`).
public struct SuspendedConnection: Sendable {
    let daemon: HTTPDaemon
    let parked: ParkedConnection

    /// Sends `response` and resumes the connection; call it exactly once,
    /// from any thread, holding no lock.
    public func answer(_ response: HTTPResponse) {
        daemon.answerSuspended(parked, with: response)
    }
}
