import ModelObservation
/// A write on its way to a commit: its body, and what it came to.
///
/// The store runs the bodies of the writes waiting together in one
/// transaction (group commit); each write keeps its own outcome.
protocol QueuedWrite: AnyObject, Sendable {
    /// Runs the body on `transaction`, keeping its result as the outcome.
    func run(_ transaction: inout WriteTransaction) throws
    /// Makes `error` the outcome.
    func fail(_ error: any Error)
    /// Its caller commits it itself and reads its outcome: `finish` hands
    /// the outcome to nobody.
    func answeredByCaller()
    /// Runs what follows a successful commit, then hands the outcome to
    /// whoever waits for it; called once, after the commit (or the
    /// failure), outside the writer lock.
    func finish(_ store: Store?)
}

/// A write whose body returns a `T`.
///
/// `@unchecked Sendable`: it is handed from the thread that submits it to the
/// committing thread through `WriteQueue`'s lock, and only that one thread
/// touches `outcome` until `finish`.
final class PendingWrite<T>: QueuedWrite, @unchecked Sendable {
    private let body: (inout WriteTransaction) throws -> T
    private let afterCommit: ((Store, T) -> Void)?
    /// Nil for a write its caller commits and reads itself.
    var completion: (@Sendable (Result<T, any Error>) -> Void)?
    private(set) var outcome: Result<T, any Error> = .failure(ModelError(.unavailable, "the write did not run"))

    init(_ body: @escaping (inout WriteTransaction) throws -> T, afterCommit: ((Store, T) -> Void)? = nil,
         completion: (@Sendable (Result<T, any Error>) -> Void)?)
    {
        self.body = body
        self.afterCommit = afterCommit
        self.completion = completion
    }

    func run(_ transaction: inout WriteTransaction) throws {
        outcome = .success(try body(&transaction))
    }

    func fail(_ error: any Error) {
        outcome = .failure(error)
    }

    func answeredByCaller() {
        completion = nil
    }

    func finish(_ store: Store?) {
        if let store, let afterCommit, case .success(let value) = outcome { afterCommit(store, value) }
        completion?(outcome)
    }
}

/// A write made ready before the writer lock (its input checked, its values
/// made): committed alone by `Store.write`, or with the writes waiting
/// beside it by `Store.submit`. `Writes` makes them.
public struct PreparedWrite<T: Sendable>: Sendable {
    let body: @Sendable (inout WriteTransaction) throws -> T
    /// What the store does once the write is committed, before the writer
    /// hears of it (scheduling a job it created, say).
    let afterCommit: (@Sendable (Store, T) -> Void)?

    public init(_ body: @escaping @Sendable (inout WriteTransaction) throws -> T, afterCommit: (@Sendable (Store, T) -> Void)? = nil) {
        self.body = body
        self.afterCommit = afterCommit
    }

    /// The same write, exempt from the quotas (a trusted address's).
    public func exemptingQuotas() -> PreparedWrite {
        PreparedWrite({ [body] transaction in
            transaction.exemptFromQuotas = true
            defer { transaction.exemptFromQuotas = false }
            return try body(&transaction)
        }, afterCommit: afterCommit)
    }
}

/// Reads of one request on their way to being stored: they wait in the
/// write queue and are stored with the reads waiting beside them, in a
/// transaction of their own (`Store.store(_:on:woken:)`), not in the
/// models' (`run` is never called).
///
/// `@unchecked Sendable`: as `PendingWrite`.
package final class PendingTrack: QueuedWrite, @unchecked Sendable {
    package let observer: String
    package let keys: [PropertyKey]
    package let seq: Int64
    let now: Double
    /// Nil for reads their caller stores and reads the outcome of itself.
    var completion: (@Sendable (Result<Void, any Error>) -> Void)?
    private(set) var outcome: Result<Void, any Error> = .failure(ModelError(.unavailable, "the reads were not stored"))

    init(observer: String, keys: [PropertyKey], seq: Int64, now: Double, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        self.observer = observer
        self.keys = keys
        self.seq = seq
        self.now = now
        self.completion = completion
    }

    func run(_ transaction: inout WriteTransaction) throws {
        throw ModelError(.unavailable, "reads are not a model write")
    }

    func fail(_ error: any Error) {
        outcome = .failure(error)
    }

    func answeredByCaller() {
        completion = nil
    }

    /// The outcome `result` stands for.
    func conclude(_ result: ObservationRegistry.TrackResult) {
        outcome = Self.outcome(of: result, observer: observer)
    }

    static func outcome(of result: ObservationRegistry.TrackResult, observer: String) -> Result<Void, any Error> {
        switch result {
        case .unknownObserver:
            .failure(ModelError.notFound("no observer \(observer)"))
        case .tooManyReads(let limit):
            .failure(ModelError.unprocessable("observer \(observer) would track more than \(limit) properties; clear its reads first"))
        case .overMemoryLimit(let limit):
            .failure(Store.overMemory(limit))
        case .tracked:
            .success(())
        }
    }

    func finish(_ store: Store?) {
        completion?(outcome)
    }
}
