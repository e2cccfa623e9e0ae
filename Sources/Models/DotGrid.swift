import JSON
import ModelObservation
import ModelStore

/// The grid of dots (seed: array observing): ragged rows that only grow,
/// each dot with two animation flags. A dot never moves, so its position is
/// as stable as its id. A change to one dot's flag wakes only readers of
/// that flag, never its whole row.
public enum DotGrid {
    /// Most dots a row may hold; most rows the grid may hold.
    public static let maxDotsPerRow = 100
    public static let maxRows = 1000
    static let rowsKey = PropertyKey("/grid/rows")

    public static let dots = Resource.collection("dots", element: "dot", at: "/grid/dots", allowing: [.get, .patch],
                                                 positioned: false, orderBy: [row.field, col.field],
                                                 unique: [[row.field, col.field]], tag: "dot grid") {
        row
        col
        Field.boolean("isTapAnimated", default: false)
        isRandomAnimated
    }
    /// Rows and columns are 0-based and dense; rows only grow.
    public static let row = Stored<Int64>(.integer("row", column: "grid_row", access: .hidden).checked(.atLeast(0)))
    public static let col = Stored<Int64>(.integer("col", column: "grid_col", access: .hidden).checked(.atLeast(0)))
    public static let isRandomAnimated = Stored<Bool>(.boolean("isRandomAnimated", default: false))
    /// What `POST /grid/rows` takes.
    static let dotsInRow = Stored<Int64>(.integer("dots", range: 1...Int64(maxDotsPerRow)))

    static let rowPlace = dots.place(of: row.name), colPlace = dots.place(of: col.name)

    /// What a new database holds: rows of 3, 2 and 4 dots.
    static let seed = [
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0001", 0, 0),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0002", 0, 1),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0003", 0, 2),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0101", 1, 0),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0102", 1, 1),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0201", 2, 0),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0202", 2, 1),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0203", 2, 2),
        dot("6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0204", 2, 3),
    ]

    static func dot(_ id: String, _ row: Int64, _ col: Int64) -> Seed {
        Seed(dots, id: id, [Self.row.with(row), Self.col.with(col)])
    }

    /// The dots row by row, each row in column order.
    static func rows(_ state: ModelState) -> [[Record]] {
        var rows: [[Record]] = []
        for dot in state[dots].values {
            let row = Int(dot[rowPlace].intValue ?? 0)
            // Dots are loaded by row and column and appended at a row's end,
            // so within a row the collection's order is column order.
            while rows.count <= row { rows.append([]) }
            rows[row].append(dot)
        }
        return rows
    }

    static let reads = [
        Read("/grid", fields: dots.selectableFields, views: [rowsView]) { input, state in
            var builder = RepresentationBuilder(resource: "/grid")
            builder.elements("rows", key: rowsKey) { builder in
                for row in rows(state) {
                    builder.array { builder in
                        for dot in row { builder.object(resource: dot.path) { dots.write(dot, in: state, into: &$0, input.selection) } }
                    }
                }
            }
            return builder.finish()
        },
        Read("/grid/rows/:row", fields: dots.selectableFields, views: [rowsView]) { input, state in
            let rows = rows(state)
            guard let index = position(input.parameter("row")), rows.indices.contains(index) else {
                throw ModelError.notFound("no row \(input.parameter("row"))")
            }
            return row(index, rows[index], in: state, input.selection)
        },
        Read("/grid/rows/:row/dots/:col", fields: dots.selectableFields) { input, state in
            let row = input.parameter("row"), col = input.parameter("col")
            guard let r = position(row), let c = position(col), let dot = rows(state).dropFirst(r).first?.dropFirst(c).first else {
                throw ModelError.notFound("no dot at row \(row), column \(col)")
            }
            return dots.representation(of: dot, in: state, input.selection)
        },
    ]

    /// The rows as a repair shows them: every row, each dot with all its
    /// fields, as `GET /grid` shows `rows`.
    static let rowsView = View(rowsKey) { state in
        "[" + rows(state).map { row in
            "[" + row.map { dots.representation(of: $0, in: state, tracking: false).string }.joined(separator: ",") + "]"
        }.joined(separator: ",") + "]"
    }

    /// `{"row", "dots"}`: a row grows only by appends to `/grid/rows`, so that is what it reads.
    static func row(_ index: Int, _ row: [Record], in state: ModelState, _ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: "/grid/rows/\(index)")
        builder.constant("row", .int(Int64(index)))
        builder.elements("dots", key: nil) { builder in
            for dot in row { builder.object(resource: dot.path) { dots.write(dot, in: state, into: &$0, selection) } }
        }
        builder.track(rowsKey)
        return builder.finish()
    }

    /// `{"row", "col", "dot"}`: the answer to `POST /grid/random` and to
    /// appending a dot, and an appended dot's `insert`. Its position is
    /// constant; only the dot's fields are read.
    static func placed(_ dot: Record, in state: ModelState) -> Representation {
        var builder = RepresentationBuilder(resource: dot.path)
        builder.constant("row", dot[rowPlace])
        builder.constant("col", dot[colPlace])
        builder.object("dot", resource: dot.path) { dots.write(dot, in: state, into: &$0) }
        return builder.finish()
    }

    static let actions = [
        Action("/grid/dots/:id/tap") { input in
            // Two transactions, so that a reader of the flag hears both, in order.
            let id = input.parameter("id")
            return .writes { store in
                try store.write(set(id, "isTapAnimated", true))
                return try store.write(set(id, "isTapAnimated", false))
            }
        },
        Action("/grid/random") { _ in
            .write(PreparedWrite { tx in
                // Uniform over every dot; a dot already set changes nothing.
                let all = tx.state[dots].values
                guard !all.isEmpty else { throw ModelError.unprocessable("the grid has no dots") }
                var generator = SystemRandomNumberGenerator()
                let chosen = all[Int.random(in: 0..<all.count, using: &generator)]
                let dot = try tx.update(dots, chosen.id) { $0[isRandomAnimated] = true }
                return .ok(placed(dot, in: tx.state))
            })
        },
        Action("/grid/rows", input: [dotsInRow.field]) { input in
            guard let count = input.body[dotsInRow] else { throw ModelError.unprocessable("dots is required") }
            return .write(PreparedWrite { tx in
                let index = rows(tx.state).count
                guard index < maxRows else { throw ModelError.unprocessable("the grid already has \(maxRows) rows") }
                var added: [Record] = []
                for col in 0..<Int(count) {
                    added.append(try tx.insert(Record.new(dots, setting: [Self.row.with(Int64(index)), Self.col.with(Int64(col))]), into: dots,
                                               announce: .none))
                }
                let representation = row(index, added, in: tx.state)
                tx.record(.insert(into: rowsKey.path, element: representation.string, elementKeys: representation.reads))
                return .created(representation, at: "/grid/rows/\(index)")
            })
        },
        Action("/grid/rows/:row/dots") { input in
            let row = input.parameter("row")
            guard let index = position(row) else { throw ModelError.notFound("no row \(row)") }
            return .write(PreparedWrite { tx in
                let rows = rows(tx.state)
                guard rows.indices.contains(index) else { throw ModelError.notFound("no row \(row)") }
                let col = rows[index].count
                guard col < maxDotsPerRow else { throw ModelError.unprocessable("row \(row) already has \(maxDotsPerRow) dots") }
                let dot = Record.new(dots, setting: [Self.row.with(Int64(index)), Self.col.with(Int64(col))])
                let placed = placed(dot, in: tx.state)
                try tx.insert(dot, into: dots, announce: .custom(.insert(into: rowsKey.path, element: placed.string,
                                                                         elementKeys: placed.reads)))
                return .ok(placed)
            })
        },
    ]

    /// Sets one flag of a dot.
    static func set(_ id: String, _ flag: String, _ value: Bool) -> PreparedWrite<Answer> {
        PreparedWrite { tx in
            let dot = try tx.update(dots, id) { $0[flag] = .bool(value) }
            return .ok(dots.representation(of: dot, in: tx.state))
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
}
