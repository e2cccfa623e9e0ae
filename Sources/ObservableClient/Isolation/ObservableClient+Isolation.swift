/// Where the client lives. The client and every object it made belong to
/// one actor, `isolation`: the one given to `init`, by default the actor
/// `init` is called on (the main actor in an app, a view or a
/// `main.swift`), and the main actor when it is called outside any actor.
/// Its loads, writes and feed run there, so a transaction is applied in one
/// turn of that actor and code observing the objects on it sees every
/// change of a transaction at once, never half of one.
///
/// The async methods run on their caller's actor (the module is built with
/// `NonisolatedNonsendingByDefault`). The client and its objects are
/// `Sendable`, so that a closure or a task can carry them back to that
/// actor (an `onChange`, an `Observations` sequence); a call or a read off
/// it stops the program with a clear message. The work the
/// client starts by itself (the feed, a refresh after narrowing) is a task
/// sent to `isolation`.
extension ObservableClient {
    /// Stops with a clear message when called off the client's actor.
    func checkIsolation(_ function: StaticString = #function) {
        isolation.preconditionIsolated(
            "ObservableClient.\(function) called off the client's actor: use a client and its objects on the actor it was made on")
    }

    /// Stops with a clear message when an object is read off the client's actor.
    func checkIsolation(reading type: Any.Type) {
        isolation.preconditionIsolated(
            "a property of \(type) read off the client's actor: use a client and its objects on the actor it was made on")
    }

    /// Runs `body` with the client as a new task on the client's actor.
    func spawn(_ body: nonisolated(nonsending) @escaping (ObservableClient) async -> Void) -> Task<Void, Never> {
        let work = OnActor(client: self, body: body)
        let isolation = self.isolation
        return Task { try? await run(work, on: isolation) }
    }

    /// Runs `body` with the client as a new task on the client's actor; its result or error.
    func spawn<Result: Sendable>(_ body: nonisolated(nonsending) @escaping (ObservableClient) async throws -> Result) -> Task<Result, any Error> {
        let work = OnActor(client: self, body: body)
        let isolation = self.isolation
        return Task { try await run(work, on: isolation) }
    }
}

/// The client and work for it, carried to the client's actor. Only `run`
/// opens it, on that actor: the actor the client and its objects belong to.
struct OnActor<Result>: @unchecked Sendable {
    let client: ObservableClient
    let body: nonisolated(nonsending) (ObservableClient) async throws -> Result
}

/// `work` on `isolation`, the client's actor. The check comes first: the
/// body must not start before the task is on the actor, and it is what
/// makes the task take its place there before calling a body that runs
/// wherever it is called from.
private func run<Result>(_ work: OnActor<Result>, on isolation: isolated any Actor) async throws -> Result {
    isolation.preconditionIsolated("a task of the client off its actor")
    return try await work.body(work.client)
}
