import HTTPServer
import JSON
import Models

extension ObservableAPI {
    func addFoodTruckRoutes(to router: Router) {
        router.get("/truck") { [self] context in
            try read(context, fields: Truck.fields) { state, fields in state.truck.representation(fields) }
        }
        router.patch("/truck") { [self] context in
            let body = try RequestBody(context.request, allowed: ["name"])
            let write = try Writes.renameTruck(to: try body.string("name"), ifMatch: context.request.header("If-Match"))
            return try commit(context, write) { truck in Self.written(truck.representation().bytes) }
        }
        router.get("/truck/orderCount") { [self] context in
            try read(context, fields: ["orderCount"]) { state, _ in state.truck.orderCountRepresentation }
        }
        router.get("/truck/donuts") { [self] context in
            try read(context, fields: Donut.fields) { state, fields in state.truck.donutList(fields) }
        }
        router.post("/truck/donuts") { [self] context in
            let body = try RequestBody(context.request, allowed: Donut.writableFields)
            return try commit(context, try Writes.addDonut(try Self.donutFields(body))) { donut in
                Self.written(donut.representation().bytes, status: 201, location: donut.path)
            }
        }
        router.get("/truck/donuts/:id") { [self] context in
            let id = context.parameter("id")
            return try read(context, fields: Donut.fields) { state, fields in
                guard let donut = state.truck.donuts[id] else { throw APIError(404, "no donut \(id)") }
                return donut.representation(fields)
            }
        }
        router.patch("/truck/donuts/:id") { [self] context in
            let body = try RequestBody(context.request, allowed: Donut.writableFields)
            let write = try Writes.updateDonut(context.parameter("id"), try Self.donutFields(body), ifMatch: context.request.header("If-Match"))
            return try commit(context, write) { donut in Self.written(donut.representation().bytes) }
        }
        router.delete("/truck/donuts/:id") { [self] context in
            try commit(context, Writes.deleteDonut(context.parameter("id"), ifMatch: context.request.header("If-Match"))) { Self.noContent }
        }
        router.get("/truck/orders") { [self] context in
            try read(context, fields: Order.fields) { state, fields in state.truck.orderList(fields) }
        }
        router.post("/truck/orders") { [self] context in
            let body = try RequestBody(context.request, allowed: ["donutId", "quantity"])
            guard let donutId = try body.string("donutId") else { throw APIError(422, "donutId is required") }
            guard let quantity = try body.integer("quantity") else { throw APIError(422, "quantity is required") }
            return try commit(context, try Writes.addOrder(donutId: donutId, quantity: quantity)) { order, json in
                Self.written(json, status: 201, location: order.path)
            }
        }
        router.get("/truck/orders/:id") { [self] context in
            let id = context.parameter("id")
            return try read(context, fields: Order.fields) { state, fields in
                guard let order = state.truck.orders[id] else { throw APIError(404, "no order \(id)") }
                return order.representation(fields)
            }
        }
        router.delete("/truck/orders/:id") { [self] context in
            try commit(context, Writes.deleteOrder(context.parameter("id"), ifMatch: context.request.header("If-Match"))) { Self.noContent }
        }
    }

    static func donutFields(_ body: RequestBody) throws -> DonutFields {
        DonutFields(name: try body.string("name"), dough: try body.string("dough"),
                    glaze: try body.nullableString("glaze"), topping: try body.nullableString("topping"))
    }
}
