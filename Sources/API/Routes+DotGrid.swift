import HTTPServer
import JSON
import Models

extension ObservableAPI {
    func addDotGridRoutes(to router: Router) {
        router.get("/grid") { [self] context in
            try read(context, fields: Dot.fields) { state, fields in state.grid.representation(fields) }
        }
        router.post("/grid/random") { [self] context in
            _ = try RequestBody(context.request, allowed: [], emptyAllowed: true)
            return try commit(context, Writes.animateRandomDot()) { placed in Self.written(Self.placed(placed)) }
        }
        router.post("/grid/rows") { [self] context in
            let body = try RequestBody(context.request, allowed: ["dots"])
            guard let count = try body.integer("dots") else { throw APIError(422, "dots is required") }
            return try commit(context, try Writes.appendRow(dots: count)) { row, dots in
                let json: JSONValue = ["row": .int(Int64(row)), "dots": .array(dots.map { $0.representation().json })]
                return Self.written(json, status: 201, location: DotGrid.rowsPath + "/\(row)")
            }
        }
        router.get("/grid/rows/:row") { [self] context in
            let row = context.parameter("row")
            return try read(context, fields: Dot.fields) { state, fields in
                guard let index = Self.position(row), state.grid.rows.indices.contains(index) else {
                    throw APIError(404, "no row \(row)")
                }
                return state.grid.rowRepresentation(index, fields)
            }
        }
        router.post("/grid/rows/:row/dots") { [self] context in
            let row = context.parameter("row")
            _ = try RequestBody(context.request, allowed: [], emptyAllowed: true)
            guard let index = Self.position(row) else { throw APIError(404, "no row \(row)") }
            return try commit(context, Writes.appendDot(toRow: index)) { placed in Self.written(Self.placed(placed)) }
        }
        router.get("/grid/rows/:row/dots/:col") { [self] context in
            let row = context.parameter("row")
            let col = context.parameter("col")
            return try read(context, fields: Dot.fields) { state, fields in
                guard let r = Self.position(row), let c = Self.position(col),
                      let dot = state.grid.dot(at: DotPosition(row: r, col: c))
                else { throw APIError(404, "no dot at row \(row), column \(col)") }
                return dot.representation(fields)
            }
        }
        router.get("/grid/dots/:id") { [self] context in
            let id = context.parameter("id")
            return try read(context, fields: Dot.fields) { state, fields in
                guard let dot = state.grid[id] else { throw APIError(404, "no dot \(id)") }
                return dot.representation(fields)
            }
        }
        router.patch("/grid/dots/:id") { [self] context in
            let body = try RequestBody(context.request, allowed: Dot.writableFields)
            let fields = DotFields(isTapAnimated: try body.bool("isTapAnimated"), isRandomAnimated: try body.bool("isRandomAnimated"))
            let write = Writes.updateDot(context.parameter("id"), fields, ifMatch: context.request.header("If-Match"))
            return try commit(context, write) { dot in Self.written(dot.representation().bytes) }
        }
        router.post("/grid/dots/:id/tap") { [self] context in
            _ = try RequestBody(context.request, allowed: [], emptyAllowed: true)
            return .response(Self.written(try store.tapDot(context.parameter("id")).representation().bytes))
        }
    }

    /// A 0-based position from a URL segment: decimal digits only, no sign
    /// and no leading zero, so one position has one URL. Anything else
    /// names no position (`nil`), and so no resource.
    static func position(_ segment: String) -> Int? {
        guard !segment.isEmpty, segment.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              segment == "0" || !segment.hasPrefix("0")
        else { return nil }
        return Int(segment)
    }

    /// `{"row", "col", "dot"}`.
    static func placed(_ placed: PlacedDot) -> JSONValue {
        ["row": .int(Int64(placed.position.row)), "col": .int(Int64(placed.position.col)), "dot": placed.dot.representation().json]
    }
}
