import JSON
import Observation

/// The food truck (`/truck`): its name, menu, orders and order count.
public final class Truck: CollectionOwner, @unchecked Sendable {
    /// The truck's name.
    public var name: String { noteRead(0, \.name); return _name }
    /// The menu, in the order the donuts were added.
    public var donuts: [Donut] { noteRead(1, \.donuts); return _donuts }
    /// The orders loaded so far, newest first: the newest page, then each
    /// page `loadMoreOrders()` added. New orders arrive at the front.
    public var orders: [Order] { noteRead(2, \.orders); return _orders }
    /// The number of all orders, loaded or not (computed by the server).
    public var orderCount: Int { noteRead(3, \.orderCount); return _orderCount }
    /// True while older orders remain to be loaded with `loadMoreOrders()`.
    public var hasMoreOrders: Bool {
        registrar.access(self, keyPath: \.hasMoreOrders)
        return nextOrders != nil
    }

    var _name = "", _donuts: [Donut] = [], _orders: [Order] = [], _orderCount = 0
    /// The path and query of the next older page of orders, from `Link`.
    var nextOrders: String? {
        didSet { if nextOrders != oldValue { registrar.withMutation(of: self, keyPath: \.hasMoreOrders) {} } }
    }
    /// The pages of orders loaded, for reading them again.
    var orderPages = 1
    let path = "/truck"
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Truck.allFields
    var freshAt: Int64 = -1
    static let fields = ["name", "donuts", "orders", "orderCount"]

    init(client: ObservableClient) {
        self.client = client
    }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "name": update(\.name, \._name, value.string)
        case "orderCount": update(\.orderCount, \._orderCount, value.int)
        case "donuts": replace("donuts", with: value.arrayValue ?? [], repaired: false)
        case "orders": replace("orders", with: value.arrayValue ?? [], repaired: false)
        default: break
        }
    }

    func apply(_ change: FeedChange, field: String) {
        guard let client else { return }
        switch (field, change.operation) {
        case ("donuts", .insert):
            guard let new = change.new, let id = new.id, !_donuts.contains(id: id) else { return }
            update(\.donuts, \._donuts, _donuts + [client.element(Donut.self, new, parent: path)])
        case ("orders", .insert):
            guard let new = change.new, let id = new.id, !_orders.contains(id: id) else { return }
            update(\.orders, \._orders, [client.element(Order.self, new, parent: path)] + _orders)
        case ("donuts", .remove):
            guard let id = change.old?.id else { return }
            update(\.donuts, \._donuts, _donuts.filter { $0.id != id })
            client.forget(Donut.path(id: id, parent: path))
        case ("orders", .remove):
            guard let id = change.old?.id else { return }
            update(\.orders, \._orders, _orders.filter { $0.id != id })
            client.forget(Order.path(id: id, parent: path))
        case (_, .set), (_, .repair):
            if let value = change.new { set(field, value) }
        default:
            break
        }
    }

    func replace(_ field: String, with elements: [JSONValue], repaired: Bool) {
        guard let client else { return }
        switch field {
        case "donuts":
            update(\.donuts, \._donuts, elements.map { client.element(Donut.self, $0, parent: path) })
        case "orders":
            let ordered = newestFirst(elements, repaired: repaired, current: _orders.map(\.id))
            update(\.orders, \._orders, ordered.map { client.element(Order.self, $0, parent: path) })
        default:
            break
        }
    }

    /// Loads the next older page of orders (`GET` of the `Link` the last page
    /// answered), which the server then tracks like the first. Does nothing
    /// when `hasMoreOrders` is false.
    public func loadMoreOrders() async throws {
        guard let client, let next = nextOrders else { return }
        try await client.loadOrdersPage(next, into: self)
    }

    /// Renames the truck (`PATCH /truck`).
    public func rename(to name: String) async throws {
        try await ObservableClient.write(client, "PATCH", path, body: ["name": .string(name)])
    }

    /// Adds a donut to the menu (`POST /truck/donuts`) and returns it. It joins
    /// `donuts` when the feed brings its insert.
    public func addDonut(name: String, dough: String? = nil, glaze: String? = nil, topping: String? = nil) async throws -> Donut {
        var body = JSONObject()
        body["name"] = .string(name)
        if let dough { body["dough"] = .string(dough) }
        if let glaze { body["glaze"] = .string(glaze) }
        if let topping { body["topping"] = .string(topping) }
        let created = try await ObservableClient.write(client, "POST", path + "/donuts", body: .object(body))
        return try await ObservableClient.created(client, Donut.self, created, parent: path)
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
        let created = try await ObservableClient.write(
            client, "POST", path + "/orders", body: ["donutId": .string(donutId), "quantity": .int(Int64(quantity))])
        return try await ObservableClient.created(client, Order.self, created, parent: path)
    }
}
