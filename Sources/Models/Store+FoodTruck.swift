import FoundationEssentials
import JSON
import ModelObservation

/// The fields of a donut a request sets; a field left `nil` is unchanged,
/// and `.some(nil)` clears an optional field.
public struct DonutFields: Sendable {
    public var name: String?
    public var dough: String?
    public var glaze: String??
    public var topping: String??

    public init(name: String? = nil, dough: String? = nil, glaze: String?? = nil, topping: String?? = nil) {
        self.name = name
        self.dough = dough
        self.glaze = glaze
        self.topping = topping
    }
}

extension Store {
    public static let maxTextLength = 200
    public static let quantityRange: ClosedRange<Int64> = 1...1000

    static func validateText(_ value: String?, _ field: String) throws(ModelError) {
        guard let value else { return }
        if value.allSatisfy(\.isWhitespace) {
            throw .unprocessable("\(field) must not be empty")
        }
        if value.count > maxTextLength {
            throw .unprocessable("\(field) must be at most \(maxTextLength) characters")
        }
    }

    /// Renames the truck; without a name (an empty patch) nothing changes.
    public func renameTruck(to name: String?, ifMatch: String? = nil) throws -> Truck {
        try write(Writes.renameTruck(to: name, ifMatch: ifMatch))
    }

    /// Adds a donut to the menu.
    public func addDonut(_ fields: DonutFields) throws -> Donut {
        try write(Writes.addDonut(fields))
    }

    /// Changes some fields of a donut; each field that changes is one change.
    public func updateDonut(_ id: String, _ fields: DonutFields, ifMatch: String? = nil) throws -> Donut {
        try write(Writes.updateDonut(id, fields, ifMatch: ifMatch))
    }

    /// Removes a donut from the menu. Its orders stay, as a record of sales.
    public func deleteDonut(_ id: String, ifMatch: String? = nil) throws {
        try write(Writes.deleteDonut(id, ifMatch: ifMatch))
    }

    /// Places an order; `orderCount` moves with it in the same transaction.
    /// Returns the order and its JSON (the body of the answer).
    public func addOrder(donutId: String, quantity: Int64) throws -> (order: Order, json: [UInt8]) {
        try write(Writes.addOrder(donutId: donutId, quantity: quantity))
    }

    /// Cancels an order.
    public func deleteOrder(_ id: String, ifMatch: String? = nil) throws {
        try write(Writes.deleteOrder(id, ifMatch: ifMatch))
    }
}

extension Writes {
    /// Renames the truck; without a name (an empty patch) nothing changes.
    public static func renameTruck(to name: String?, ifMatch: String? = nil) throws -> PreparedWrite<Truck> {
        try Store.validateText(name, "name")
        return PreparedWrite { tx in
            try tx.require(ifMatch: ifMatch, current: tx.state.truck.representation())
            let old = tx.state.truck.name
            guard let name, old != name else { return tx.state.truck }
            try tx.execute("UPDATE truck SET name = ? WHERE id = 1", [.text(name)])
            tx.state.truck.name = name
            tx.set(Truck.path + "/name", old: .string(old), new: .string(name))
            return tx.state.truck
        }
    }

    /// Adds a donut to the menu.
    public static func addDonut(_ fields: DonutFields) throws -> PreparedWrite<Donut> {
        guard let name = fields.name else { throw ModelError.unprocessable("name is required") }
        try Store.validateText(name, "name")
        try Store.validateText(fields.dough, "dough")
        try Store.validateText(fields.glaze ?? nil, "glaze")
        try Store.validateText(fields.topping ?? nil, "topping")
        return PreparedWrite { tx in
            let donut = Donut(id: Identifier.make(), name: name, dough: fields.dough ?? "plain",
                              glaze: fields.glaze ?? nil, topping: fields.topping ?? nil, position: tx.takePosition())
            try tx.execute(
                "INSERT INTO donuts (id, position, name, dough, glaze, topping) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(donut.id), .integer(donut.position), .text(donut.name), .text(donut.dough), donut.glaze.sqlValue, donut.topping.sqlValue])
            tx.state.truck.donuts[donut.id] = donut
            tx.insert(into: Truck.donutsPath, element: donut.representation())
            return donut
        }
    }

    /// Changes some fields of a donut; each field that changes is one change.
    public static func updateDonut(_ id: String, _ fields: DonutFields, ifMatch: String? = nil) throws -> PreparedWrite<Donut> {
        try Store.validateText(fields.name, "name")
        try Store.validateText(fields.dough, "dough")
        try Store.validateText(fields.glaze ?? nil, "glaze")
        try Store.validateText(fields.topping ?? nil, "topping")
        return PreparedWrite { tx in
            guard let old = tx.state.truck.donuts[id] else { throw ModelError.notFound("no donut \(id)") }
            try tx.require(ifMatch: ifMatch, current: old.representation())
            var new = old
            if let name = fields.name { new.name = name }
            if let dough = fields.dough { new.dough = dough }
            if let glaze = fields.glaze { new.glaze = glaze }
            if let topping = fields.topping { new.topping = topping }
            guard new != old else { return old }
            try tx.execute("UPDATE donuts SET name = ?, dough = ?, glaze = ?, topping = ? WHERE id = ?",
                           [.text(new.name), .text(new.dough), new.glaze.sqlValue, new.topping.sqlValue, .text(id)])
            tx.state.truck.donuts[id] = new
            for field in Donut.writableFields {
                tx.set(new.path + "/" + field, old: old.value(of: field), new: new.value(of: field))
            }
            return new
        }
    }

    /// Removes a donut from the menu. Its orders stay, as a record of sales.
    public static func deleteDonut(_ id: String, ifMatch: String? = nil) -> PreparedWrite<Void> {
        PreparedWrite { tx in
            guard let donut = tx.state.truck.donuts[id] else { throw ModelError.notFound("no donut \(id)") }
            try tx.require(ifMatch: ifMatch, current: donut.representation())
            try tx.execute("DELETE FROM donuts WHERE id = ?", [.text(id)])
            tx.state.truck.donuts[id] = nil
            tx.remove(from: Truck.donutsPath, element: donut.representation())
        }
    }

    /// Places an order; `orderCount` moves with it in the same transaction.
    /// Returns the order and its JSON (the body of the answer).
    public static func addOrder(donutId: String, quantity: Int64) throws -> PreparedWrite<(order: Order, json: [UInt8])> {
        guard Store.quantityRange.contains(quantity) else {
            throw ModelError.unprocessable("quantity must be between 1 and 1000")
        }
        // The id and the change's JSON do not depend on the state: made
        // before taking the writer lock, so that writes wait less for it.
        let id = Identifier.make()
        let representation = Order(id: id, donutId: donutId, quantity: quantity, position: 0).representation()
        let json = JSONWriter.bytes(representation.json)
        let inserted = PendingChange.insert(into: Truck.ordersPath, element: String(decoding: json, as: UTF8.self),
                                            elementKeys: representation.reads)
        return PreparedWrite { tx in
            guard tx.state.truck.donuts[donutId] != nil else {
                throw ModelError.unprocessable("no donut \(donutId) on the menu")
            }
            let order = Order(id: id, donutId: donutId, quantity: quantity, position: tx.takePosition())
            try tx.execute("INSERT INTO orders (id, position, donut_id, quantity) VALUES (?, ?, ?, ?)",
                           [.text(order.id), .integer(order.position), .text(donutId), .integer(quantity)])
            tx.state.truck.orders[order.id] = order
            tx.appendPending(inserted)
            return (order, json)
        }
    }

    /// Cancels an order.
    public static func deleteOrder(_ id: String, ifMatch: String? = nil) -> PreparedWrite<Void> {
        PreparedWrite { tx in
            guard let order = tx.state.truck.orders[id] else { throw ModelError.notFound("no order \(id)") }
            try tx.require(ifMatch: ifMatch, current: order.representation())
            try tx.execute("DELETE FROM orders WHERE id = ?", [.text(id)])
            tx.state.truck.orders[id] = nil
            tx.remove(from: Truck.ordersPath, element: order.representation())
        }
    }
}
