import Synchronization
import ModelObservation

extension Store {
    /// The quotas on observers, from the store's configuration, with their
    /// refusals counted.
    final class ObserverQuotas: Sendable {
        let maxObservers: Int
        let maxPerClient: Int
        let maxTTL: Int
        let perClientRefusals = RefusalCounter()
        let totalRefusals = RefusalCounter()
        /// New observers and new reads refused for the registry's memory.
        let memoryRefusals = RefusalCounter()
        let ttlRefusals = RefusalCounter()

        init(_ configuration: Configuration) {
            maxObservers = configuration.maxObservers
            maxPerClient = configuration.maxObserversPerClient
            maxTTL = configuration.maxObserverTTL
        }
    }

    /// The quota on each collection's rows, with its refusals counted.
    final class RowQuota: Sendable {
        let limit: Int
        let refusals = RefusalCounter()

        init(limit: Int) {
            self.limit = limit
        }

        /// The `507` of an insert into `resource`, which holds `limit` elements.
        func refusal(_ resource: Resource) -> ModelError {
            refusals.record()
            return ModelError(.insufficientStorage, "\(resource.path) holds \(limit) elements, the most a collection may hold (--max-rows): nothing was written; delete some first")
        }
    }

    /// The refusal of a new observer, as the client is told it.
    func refusal(_ refusal: ObservationRegistry.Refusal) -> ModelError {
        switch refusal {
        case .ownerAtLimit(let limit):
            quotas.perClientRefusals.record()
            return ModelError(.tooManyRequests(retryAfter: Self.observerRetryAfter),
                              "this client holds \(limit) observers, the most one client may hold (--max-observers-per-client): delete one it no longer uses (DELETE /observers/{id}), or let one expire")
        case .atLimit(let limit):
            quotas.totalRefusals.record()
            return ModelError(.insufficientStorage, "the server holds \(limit) observers, the most it may hold (--max-observers): try again once some are deleted or expire")
        case .overMemoryLimit(let limit):
            quotas.memoryRefusals.record()
            return Self.overMemory(limit)
        }
    }

    /// The refusal of a new observer or read past the registry's memory limit.
    static func overMemory(_ limit: Int) -> ModelError {
        ModelError(.insufficientStorage, "observers and their reads would take more than the \(limit) bytes the server keeps for them (--max-registry-memory): nothing was tracked; try again once observers are deleted, cleared or expire")
    }

    /// Seconds a client at its quota of observers is told to wait: time for
    /// one of its observers to go, unless it deletes one first.
    static let observerRetryAfter = 60
}

extension Store: QuotaReporting {
    public var quotaReports: [QuotaReport] {
        let owners = registry.owners
        return [
            QuotaReport("observers_per_client", limit: quotas.maxPerClient, used: owners.largest, refusals: quotas.perClientRefusals),
            QuotaReport("observers", limit: quotas.maxObservers, used: registry.observerCount, refusals: quotas.totalRefusals),
            QuotaReport("registry_memory", limit: registry.maxBytes, used: registry.memoryBytes, refusals: quotas.memoryRefusals),
            QuotaReport("observer_ttl", limit: quotas.maxTTL, used: nil, refusals: quotas.ttlRefusals),
            QuotaReport("rows_per_collection", limit: rowQuota.limit,
                        used: catalog.resources.filter { $0.kind != .singleton }.map { snapshot.state[$0].count }.max(), refusals: rowQuota.refusals),
        ]
    }
}

extension Store {
    /// Whether writes fail for lack of room on the disk: set by a write the
    /// storage refused so (`ModelStorage.isOutOfSpace`), cleared by the next
    /// that commits. While set, `/healthz` says the server is degraded.
    public final class OutOfSpace: Sendable {
        private let failing = Atomic<Bool>(false)
        public let refusals = RefusalCounter()

        public var isFailing: Bool { failing.load(ordering: .relaxed) }

        func failed() {
            failing.store(true, ordering: .relaxed)
            refusals.record()
        }

        func committed() {
            if failing.load(ordering: .relaxed) { failing.store(false, ordering: .relaxed) }
        }
    }

    /// `error` as the client is told it: a full disk is `507`.
    func mapped(_ error: any Error, from storage: any ModelStorage) -> any Error {
        guard storage.isOutOfSpace(error) else { return error }
        outOfSpace.failed()
        logger.error("a write failed: the disk is full (\(error))")
        return ModelError(.insufficientStorage, "the server's disk (or its --max-database-size) is full: nothing was written; writes succeed again once room is made")
    }
}
