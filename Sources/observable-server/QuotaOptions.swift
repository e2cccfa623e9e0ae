import API
import HTTPServer
import ArgumentParser
import Models

/// The quotas that keep one client, or all of them together, from taking
/// more than the server can give (docs/OPERATIONS.md, "Quotas"): each a flag and an
/// `OBSERVABLE_…` variable.
struct QuotaOptions: ParsableArguments {
    @Option(name: .customLong("max-observers-per-client"), help: "Most observers one client (its token, else its address) may hold; more is 429 (env OBSERVABLE_MAX_OBSERVERS_PER_CLIENT; default 1000).")
    var maxObserversPerClient: Int?

    @Option(name: .customLong("max-observers"), help: "Most observers in all; more is 507 (env OBSERVABLE_MAX_OBSERVERS; default 100000).")
    var maxObservers: Int?

    @Option(name: .customLong("max-registry-memory"), help: "Bytes observers, their reads and the change log may be estimated to take (1073741824, 512M, 1G); a new observer or read past them is 507 (env OBSERVABLE_MAX_REGISTRY_MEMORY; default 1G).")
    var maxRegistryMemory: ByteCount?

    @Option(name: .customLong("max-observer-ttl"), help: "Longest ttlSeconds an observer may ask for, 1 to 86400; longer is 422 (env OBSERVABLE_MAX_OBSERVER_TTL; default 86400).")
    var maxObserverTTL: Int?

    @Option(name: .customLong("max-running-jobs"), help: "Most jobs the server advances at once; another is 429 (env OBSERVABLE_MAX_RUNNING_JOBS; default 100).")
    var maxRunningJobs: Int?

    @Option(name: .customLong("min-job-interval"), help: "Shortest intervalMs of a job the server advances, 10 to 3600000; shorter is 422 (env OBSERVABLE_MIN_JOB_INTERVAL; default 100).")
    var minJobInterval: Int?

    @Option(name: .customLong("max-streams-per-client"), help: "Most event streams of the change feed one client may hold open; another is 429 (env OBSERVABLE_MAX_STREAMS_PER_CLIENT; default 64).")
    var maxStreamsPerClient: Int?

    @Option(name: .customLong("max-writes-per-second"), help: "Writes one client may make a second, sustained; more is 429 with Retry-After (env OBSERVABLE_MAX_WRITES_PER_SECOND; default 50).")
    var maxWritesPerSecond: Double?

    @Option(name: .customLong("write-burst"), help: "Writes one client may make at once before its rate holds it (env OBSERVABLE_WRITE_BURST; default 500).")
    var writeBurst: Int?

    @Option(name: .customLong("max-rows"), help: "Most elements one collection (/truck/orders, /posts, …) may hold; an insert past it is 507 (env OBSERVABLE_MAX_ROWS; default 5000).")
    var maxRows: Int?

    @Option(name: .customLong("large-read-elements"), help: "Elements past which a read (a list, or the truck with its collections) is rendered on a thread of its own (env OBSERVABLE_LARGE_READ_ELEMENTS; default 200).")
    var largeReadElements: Int?

    @Option(name: .customLong("large-read-bytes"), help: "Bytes past which such a read's answer is sent a piece at a time, rendered again as it goes, never whole in memory (1048576, 256K, 1M; env OBSERVABLE_LARGE_READ_BYTES; default 1M).")
    var largeReadBytes: ByteCount?

    @Option(name: .customLong("max-large-reads-per-client"), help: "Large reads one client may have in progress; another is 503 with Retry-After (env OBSERVABLE_MAX_LARGE_READS_PER_CLIENT; default 4).")
    var maxLargeReadsPerClient: Int?

    @Option(name: .customLong("max-large-reads"), help: "Large reads in progress in all, each on a thread of its own; another is 503 with Retry-After (env OBSERVABLE_MAX_LARGE_READS; default 32).")
    var maxLargeReads: Int?

    @Option(name: .customLong("trusted-addresses"), help: "Comma-separated addresses and CIDR ranges exempt from every per-client quota and rate and from --max-rows: a benchmark's or a test's client (env OBSERVABLE_TRUSTED_ADDRESSES; default none).")
    var trustedAddresses: String?

    /// Sets the quotas of `configuration`, its models' included.
    func apply(to configuration: inout Application.Configuration) throws {
        configuration.store.maxObserversPerClient = try setting(maxObserversPerClient, "OBSERVABLE_MAX_OBSERVERS_PER_CLIENT", default: 1_000)
        configuration.store.maxObservers = try setting(maxObservers, "OBSERVABLE_MAX_OBSERVERS", default: 100_000)
        configuration.store.maxRegistryMemory = try setting(maxRegistryMemory, "OBSERVABLE_MAX_REGISTRY_MEMORY", default: ByteCount(1 << 30)).bytes
        configuration.store.maxObserverTTL = try setting(maxObserverTTL, "OBSERVABLE_MAX_OBSERVER_TTL", default: 86_400)
        var jobs = Jobs.Limits()
        jobs.maxRunning = try setting(maxRunningJobs, "OBSERVABLE_MAX_RUNNING_JOBS", default: jobs.maxRunning)
        jobs.minIntervalMs = try setting(minJobInterval, "OBSERVABLE_MIN_JOB_INTERVAL", default: jobs.minIntervalMs)
        configuration.models = SeedModels.catalog(jobLimits: jobs)
        configuration.limits.maxStreamsPerClient = try setting(maxStreamsPerClient, "OBSERVABLE_MAX_STREAMS_PER_CLIENT", default: 64)
        configuration.limits.maxWritesPerSecond = try setting(maxWritesPerSecond, "OBSERVABLE_MAX_WRITES_PER_SECOND", default: 50)
        configuration.limits.writeBurst = try setting(writeBurst, "OBSERVABLE_WRITE_BURST", default: 500)
        configuration.store.maxRowsPerCollection = try setting(maxRows, "OBSERVABLE_MAX_ROWS", default: 5_000)
        configuration.limits.largeReadElements = try setting(largeReadElements, "OBSERVABLE_LARGE_READ_ELEMENTS", default: 200)
        configuration.limits.largeReadBytes = try setting(largeReadBytes, "OBSERVABLE_LARGE_READ_BYTES", default: ByteCount(1 << 20)).bytes
        configuration.limits.maxLargeReadsPerClient = try setting(maxLargeReadsPerClient, "OBSERVABLE_MAX_LARGE_READS_PER_CLIENT", default: 4)
        configuration.limits.maxLargeReads = try setting(maxLargeReads, "OBSERVABLE_MAX_LARGE_READS", default: 32)
        guard configuration.limits.largeReadElements >= 0, configuration.limits.largeReadBytes >= 0,
              configuration.limits.maxLargeReadsPerClient >= 1, configuration.limits.maxLargeReads >= 1
        else { throw ValidationError("large-read-elements and large-read-bytes must not be negative, max-large-reads-per-client and max-large-reads positive") }
        do {
            configuration.http.trustedAddresses = try TrustedAddresses(parsing: setting(trustedAddresses, "OBSERVABLE_TRUSTED_ADDRESSES") ?? "")
        } catch {
            throw ValidationError("trusted-addresses: \(error)")
        }
        guard configuration.limits.maxWritesPerSecond > 0, configuration.limits.writeBurst >= 1, configuration.store.maxRowsPerCollection >= 1 else {
            throw ValidationError("max-writes-per-second, write-burst and max-rows must be positive")
        }
        guard configuration.store.maxObserversPerClient >= 1, configuration.store.maxObservers >= 1,
              configuration.store.maxRegistryMemory >= 1, configuration.limits.maxStreamsPerClient >= 1, jobs.maxRunning >= 0
        else { throw ValidationError("max-observers-per-client, max-observers, max-registry-memory and max-streams-per-client must be positive, max-running-jobs not negative") }
        guard (1...86_400).contains(configuration.store.maxObserverTTL) else { throw ValidationError("max-observer-ttl must be between 1 and 86400") }
        guard Jobs.Limits.intervalRange.contains(Int64(jobs.minIntervalMs)) else {
            throw ValidationError("min-job-interval must be between 10 and 3600000")
        }
    }
}

