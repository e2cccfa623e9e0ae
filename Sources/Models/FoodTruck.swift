import JSON
import ModelStore

/// The food truck (seed: Observation's FoodTruckModel): its name, its menu
/// of donuts and its orders, and the number of orders, computed.
public enum FoodTruck {
    public static let donuts = Resource.collection("donuts", element: "donut", at: "/truck/donuts",
                                                   allowing: [.list, .create, .get, .patch, .delete], tag: "food truck",
                                                   queryable: ["dough", "glaze", "topping"]) {
        name
        dough
        glaze
        topping
    }
    public static let name = Stored<String>(.text("name"))
    public static let dough = Stored<String>(.text("dough", default: "plain"))
    public static let glaze = Stored<String?>(.text("glaze", nullable: true))
    public static let topping = Stored<String?>(.text("topping", nullable: true))

    /// Orders stay when their donut leaves the menu, as a record of sales.
    public static let orders = Resource.collection("orders", element: "order", at: "/truck/orders",
                                                   allowing: [.list, .create, .get, .delete], checkCreate: onTheMenu,
                                                   tag: "food truck", queryable: ["donutId", "quantity"]) {
        donutId
        Field.integer("quantity", access: .createOnly, range: 1...1000)
    }
    public static let donutId = Stored<String>(.text("donutId", access: .createOnly, limits: nil,
                                                     description: "The donut ordered; it must be on the menu, and the order is kept when it leaves."))

    public static let truck = Resource.singleton("truck", at: "/truck", allowing: [.get, .patch], tag: "food truck") {
        truckName
        donuts
        orders
        Computed("orderCount", .integer, description: "The number of orders") { state, _ in .int(Int64(state[orders].count)) }
    }
    public static let truckName = Stored<String>(.text("name"))

    /// What a new database holds: the truck "Food Truck" and four donuts on its menu.
    static let seed = [
        Seed(truck, [truckName.with("Food Truck")]),
        Seed(donuts, id: "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", [name.with("Glazed"), dough.with("plain"), glaze.with("sugar")]),
        Seed(donuts, id: "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002",
             [name.with("Chocolate Frosted"), dough.with("chocolate"), glaze.with("chocolate"), topping.with("sprinkles")]),
        Seed(donuts, id: "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003",
             [name.with("Strawberry Sprinkle"), dough.with("plain"), glaze.with("strawberry"), topping.with("sprinkles")]),
        Seed(donuts, id: "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0004", [name.with("Maple Bar"), dough.with("plain"), glaze.with("maple")]),
    ]

    @Sendable static func onTheMenu(_ state: ModelState, _ order: Record) throws {
        let donut = order[donutId]
        guard state[donuts].contains(donut) else { throw ModelError.unprocessable("no donut \(donut) on the menu") }
    }
}
