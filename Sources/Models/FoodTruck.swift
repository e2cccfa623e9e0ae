import JSON
import ModelObservation
import OrderedCollections

/// A donut on the truck's menu.
public struct Donut: Sendable, Equatable {
    public static let fields = ["id", "name", "dough", "glaze", "topping"]
    /// The fields a client may set.
    public static let writableFields = ["name", "dough", "glaze", "topping"]

    public let id: String
    public var name: String
    public var dough: String
    public var glaze: String?
    public var topping: String?
    let position: Int64
    /// `/truck/donuts/{id}`, and the keys of `writableFields` in their order:
    /// made once, since every read of the donut tracks them.
    public let path: String
    let fieldKeys: [PropertyKey]

    init(id: String, name: String, dough: String, glaze: String?, topping: String?, position: Int64) {
        self.id = id
        self.name = name
        self.dough = dough
        self.glaze = glaze
        self.topping = topping
        self.position = position
        let path = Truck.donutsPath + "/" + id
        self.path = path
        fieldKeys = Self.writableFields.map { PropertyKey(path, $0) }
    }

    public func value(of field: String) -> JSONValue {
        switch field {
        case "id": return .string(id)
        case "name": return .string(name)
        case "dough": return .string(dough)
        case "glaze": return glaze.json
        case "topping": return topping.json
        default: return .null
        }
    }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path, fields: 5)
        writeFields(into: &builder, selection)
        return builder.finish()
    }

    /// Its fields, into the object `builder` is writing.
    func writeFields(into builder: inout RepresentationBuilder, _ selection: FieldSelection = .all) {
        builder.constant("id", .string(id))
        for (field, key) in zip(Self.writableFields, fieldKeys) { builder.field(field, value(of: field), key: key, selection) }
    }

    /// Every property key of this donut (what an observer of it may read).
    public var keys: [PropertyKey] { fieldKeys }
}

/// An order of some donuts.
public struct Order: Sendable, Equatable {
    public static let fields = ["id", "donutId", "quantity"]

    public let id: String
    public let donutId: String
    public let quantity: Int64
    let position: Int64

    public var path: String { Truck.ordersPath + "/" + id }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path, fields: 3)
        writeFields(into: &builder, selection)
        return builder.finish()
    }

    /// Its fields, into the object `builder` is writing.
    func writeFields(into builder: inout RepresentationBuilder, _ selection: FieldSelection = .all) {
        builder.constant("id", .string(id))
        builder.field("donutId", .string(donutId), selection)
        builder.field("quantity", .int(quantity), selection)
    }

    public var keys: [PropertyKey] { [PropertyKey(path, "donutId"), PropertyKey(path, "quantity")] }
}

/// The food truck: its name, menu and orders.
public struct Truck: Sendable, Equatable {
    public static let path = "/truck"
    public static let donutsPath = "/truck/donuts"
    public static let ordersPath = "/truck/orders"
    public static let orderCountPath = "/truck/orderCount"
    public static let fields = ["name", "donuts", "orders", "orderCount"]

    public var name: String
    public var donuts: PersistentOrderedDictionary<String, Donut>
    public var orders: PersistentOrderedDictionary<String, Order>

    /// Computed: the number of orders.
    public var orderCount: Int64 { Int64(orders.count) }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: Self.path, fields: 4 + 5 * donuts.count + 3 * orders.count)
        builder.field("name", .string(name), selection)
        builder.elements("donuts", selection) { builder in
            for donut in donuts.values { builder.object(resource: donut.path) { donut.writeFields(into: &$0) } }
        }
        builder.elements("orders", selection) { builder in
            for order in orders.values { builder.object(resource: order.path) { order.writeFields(into: &$0) } }
        }
        builder.field("orderCount", .int(orderCount), selection)
        return builder.finish()
    }

    public func donutList(_ selection: FieldSelection = .all) -> Representation {
        list("donuts", path: Self.donutsPath, donuts.values.map { $0.representation(selection) })
    }

    public func orderList(_ selection: FieldSelection = .all) -> Representation {
        list("orders", path: Self.ordersPath, orders.values.map { $0.representation(selection) })
    }

    public var orderCountRepresentation: Representation {
        var builder = RepresentationBuilder(resource: Self.path, fields: 1)
        builder.field("orderCount", .int(orderCount), key: Self.orderCountKey)
        return builder.finish()
    }

    static let orderCountKey = PropertyKey(orderCountPath)

    private func list(_ name: String, path: String, _ elements: [Representation]) -> Representation {
        var reads = [PropertyKey(path)]
        for element in elements { reads.append(contentsOf: element.reads) }
        return Representation(json: .object(JSONObject([name: .array(elements.map(\.json))])), reads: reads)
    }
}
