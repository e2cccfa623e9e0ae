import JSON

/// Every model's current state, with the `seq` of the last change it reflects.
/// Reads copy it (copy-on-write makes that cheap); writes replace it after commit.
public struct ModelState: Sendable {
    public internal(set) var seq: Int64
    public internal(set) var truck: Truck
    public internal(set) var account: Account
    public internal(set) var grid: DotGrid
    public internal(set) var jobs: Jobs
    public internal(set) var games: MemoryGames
    public internal(set) var posts: Posts
    /// The next creation-order position of donuts, orders and posts.
    var nextPosition: Int64

    /// Computed properties by path. After each write, every one whose value
    /// changed is reported as a change of its own path.
    var computedProperties: [(path: String, value: JSONValue)] {
        [(Truck.orderCountPath, .int(truck.orderCount))]
    }
}
