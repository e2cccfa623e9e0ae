extension Store {
    /// Starts background work (jobs advanced by the server).
    public func startBackgroundWork() {}

    /// Stops background work; called before the database closes.
    public func stopBackgroundWork() {}
}
