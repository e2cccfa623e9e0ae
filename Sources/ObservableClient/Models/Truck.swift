/// The food truck (`/truck`): its name, menu, orders and order count.
@RemoteModel("/truck")
public final class Truck {
    /// The truck's name.
    public var name: String
    /// The menu, in the order the donuts were added.
    public var donuts: [Donut]
    /// The orders loaded so far, newest first: the newest page, then each
    /// page `loadMoreOrders()` added. New orders arrive at the front.
    @Paged public var orders: [Order]
    /// The number of all orders, loaded or not (computed by the server).
    public var orderCount: Int

    /// True while older orders remain to be loaded with `loadMoreOrders()`.
    public var hasMoreOrders: Bool {
        registrar.access(self, keyPath: \.hasMoreOrders)
        return nextOrders != nil
    }

    /// The path and query of the next older page of orders, from `Link`.
    var nextOrders: String? {
        didSet { if nextOrders != oldValue { registrar.withMutation(of: self, keyPath: \.hasMoreOrders) {} } }
    }
    /// The pages of orders loaded, for reading them again.
    @RemoteIgnored var orderPages = 1

    /// Loads the next older page of orders (`GET` of the `Link` the last page
    /// answered), which the server then tracks like the first. Does nothing
    /// when `hasMoreOrders` is false.
    public func loadMoreOrders() async throws {
        guard let client, let next = nextOrders else { return }
        try await client.loadOrdersPage(next, into: self)
    }

    /// Renames the truck (`PATCH /truck`).
    public func rename(to name: String) async throws {
        try await update(.set(\.name, name))
    }

    /// Adds a donut to the menu (`POST /truck/donuts`) with the fields given
    /// (`.set(\.dough, "chocolate")`), and returns it. It joins `donuts` when
    /// the feed brings its insert.
    public func addDonut(name: String, _ fields: RemoteEdit<Donut>...) async throws -> Donut {
        guard let client else { throw ObservableClientError.closed }
        return try await client.create(Donut.self, [.set(\.name, name)] + fields)
    }

    /// Places an order (`POST /truck/orders`) and returns it. It joins
    /// `orders`, and `orderCount` grows, when the feed brings the change.
    /// - Throws: `.rejected` for a quantity outside 1…1000 or a donut no
    ///   longer on the menu.
    @discardableResult
    public func placeOrder(_ donut: Donut, quantity: Int) async throws -> Order {
        try await placeOrder(donutId: donut.id, quantity: quantity)
    }

    /// Places an order for the donut with the id `donutId`.
    @discardableResult
    public func placeOrder(donutId: String, quantity: Int) async throws -> Order {
        guard let client else { throw ObservableClientError.closed }
        return try await client.create(Order.self, [.set(\.donutId, donutId), .set(\.quantity, quantity)])
    }
}
