extension Store {
    /// What a store is opened with: where its database is, what a commit
    /// survives, how much of the change log it keeps, and the quotas on
    /// observers.
    public struct Configuration: Sendable {
        /// Where the database is, as the engines' module
        /// (`ModelStoreDatabases`) reads it: a file path, or a URL.
        public var database: String
        public var retainChanges: Int = 100_000
        /// Most bytes the retained changes may weigh (`Change.weight`).
        public var retainChangesBytes: Int = 64 << 20
        public var durability: Durability = .processCrash
        public var maxReadsPerObserver: Int = 100_000
        /// Most observers in all (`--max-observers`).
        public var maxObservers: Int = 100_000
        /// Most observers one client may hold (`--max-observers-per-client`).
        public var maxObserversPerClient: Int = 1_000
        /// Most bytes the observation registry may be estimated to hold
        /// before it refuses new observers and reads (`--max-registry-memory`).
        public var maxRegistryMemory: Int = 1 << 30
        /// Longest TTL an observer may ask for, seconds (`--max-observer-ttl`).
        public var maxObserverTTL: Int = 86_400
        /// Most elements a top-level collection may hold (`--max-rows`); an
        /// insert past it is `507`, unless its write is exempt (a trusted
        /// address's).
        public var maxRowsPerCollection: Int = 5_000
        /// The largest the database file may grow, in bytes (SQLite only,
        /// `--max-database-size`); a write past it is `507`, as on a full
        /// disk. Nil: as large as the disk allows.
        public var maxDatabaseBytes: Int?

        public init(database: String) {
            self.database = database
        }
    }

    /// What an acknowledged commit survives: a crash of the process (the
    /// default), or a loss of power too. Each engine has its own means to
    /// it, and an engine whose database is a server of its own (shared by
    /// several instances) leaves it to that server's settings.
    public enum Durability: Sendable, CaseIterable {
        case processCrash
        case powerLoss
    }
}
