import FoundationEssentials
import JSON
import ModelObservation

/// The flags of a dot a request sets; a flag left `nil` is unchanged.
public struct DotFields: Sendable {
    public var isTapAnimated: Bool?
    public var isRandomAnimated: Bool?

    public init(isTapAnimated: Bool? = nil, isRandomAnimated: Bool? = nil) {
        self.isTapAnimated = isTapAnimated
        self.isRandomAnimated = isRandomAnimated
    }
}

/// A dot and where it sits, as `POST /grid/random` and appending a dot answer.
public struct PlacedDot: Sendable {
    public let position: DotPosition
    public let dot: Dot
}

extension Store {
    public static let newRowRange = 1...DotGrid.maxDotsPerRow

    /// Changes some flags of a dot; each flag that changes is one change.
    public func updateDot(_ id: String, _ fields: DotFields, ifMatch: String? = nil) throws -> Dot {
        try write(Writes.updateDot(id, fields, ifMatch: ifMatch))
    }

    /// Taps a dot: `isTapAnimated` goes to true and back to false, in two
    /// transactions, so a client that reads the flag hears both, in order.
    public func tapDot(_ id: String) throws -> Dot {
        _ = try updateDot(id, DotFields(isTapAnimated: true))
        return try updateDot(id, DotFields(isTapAnimated: false))
    }

    /// Sets `isRandomAnimated` on one dot chosen uniformly at random, and on
    /// no other. Choosing a dot whose flag is already set changes nothing.
    public func animateRandomDot() throws -> PlacedDot {
        try write(Writes.animateRandomDot())
    }

    /// Appends a row of `count` new dots; returns the new row's index and dots.
    public func appendRow(dots count: Int64) throws -> (row: Int, dots: [Dot]) {
        try write(Writes.appendRow(dots: count))
    }

    /// Appends one new dot to the end of row `row`.
    public func appendDot(toRow row: Int) throws -> PlacedDot {
        try write(Writes.appendDot(toRow: row))
    }

    static func save(old: Dot, new: Dot, in tx: inout WriteTransaction) throws {
        guard new != old else { return }
        try tx.execute("UPDATE dots SET is_tap_animated = ?, is_random_animated = ? WHERE id = ?",
                       [.integer(new.isTapAnimated ? 1 : 0), .integer(new.isRandomAnimated ? 1 : 0), .text(new.id)])
        tx.state.grid.update(new)
        for field in Dot.writableFields {
            tx.set(new.path + "/" + field, old: old.value(of: field), new: new.value(of: field))
        }
    }

    static func insert(_ dot: Dot, row: Int, col: Int, in tx: inout WriteTransaction) throws {
        try tx.execute("INSERT INTO dots (id, grid_row, grid_col, is_tap_animated, is_random_animated) VALUES (?, ?, ?, 0, 0)",
                       [.text(dot.id), .integer(Int64(row)), .integer(Int64(col))])
    }
}

extension Writes {
    /// Changes some flags of a dot; each flag that changes is one change.
    public static func updateDot(_ id: String, _ fields: DotFields, ifMatch: String? = nil) -> PreparedWrite<Dot> {
        PreparedWrite { tx in
            guard let old = tx.state.grid[id] else { throw ModelError.notFound("no dot \(id)") }
            try tx.require(ifMatch: ifMatch, current: old.representation())
            var new = old
            if let value = fields.isTapAnimated { new.isTapAnimated = value }
            if let value = fields.isRandomAnimated { new.isRandomAnimated = value }
            try Store.save(old: old, new: new, in: &tx)
            return new
        }
    }

    /// Sets `isRandomAnimated` on one dot chosen uniformly at random, and on
    /// no other. Choosing a dot whose flag is already set changes nothing.
    public static func animateRandomDot() -> PreparedWrite<PlacedDot> {
        PreparedWrite { tx in
            let count = tx.state.grid.dotCount
            guard count > 0 else { throw ModelError.unprocessable("the grid has no dots") }
            var generator = SystemRandomNumberGenerator()
            var index = Int.random(in: 0..<count, using: &generator)
            var row = 0
            while index >= tx.state.grid.rows[row].count {
                index -= tx.state.grid.rows[row].count
                row += 1
            }
            let position = DotPosition(row: row, col: index)
            let old = tx.state.grid.rows[row][index]
            var new = old
            new.isRandomAnimated = true
            try Store.save(old: old, new: new, in: &tx)
            return PlacedDot(position: position, dot: new)
        }
    }

    /// Appends a row of `count` new dots; returns the new row's index and dots.
    public static func appendRow(dots count: Int64) throws -> PreparedWrite<(row: Int, dots: [Dot])> {
        guard Store.newRowRange.contains(Int(clamping: count)) else {
            throw ModelError.unprocessable("dots must be between 1 and \(DotGrid.maxDotsPerRow)")
        }
        return PreparedWrite { tx in
            let row = tx.state.grid.rows.count
            guard row < DotGrid.maxRows else { throw ModelError.unprocessable("the grid already has \(DotGrid.maxRows) rows") }
            let dots = (0..<Int(count)).map { _ in Dot(id: Identifier.make(), isTapAnimated: false, isRandomAnimated: false) }
            for (col, dot) in dots.enumerated() { try Store.insert(dot, row: row, col: col, in: &tx) }
            tx.state.grid.appendRow(dots)
            tx.insert(into: DotGrid.rowsPath, element: tx.state.grid.rowRepresentation(row))
            return (row, dots)
        }
    }

    /// Appends one new dot to the end of row `row`.
    public static func appendDot(toRow row: Int) -> PreparedWrite<PlacedDot> {
        PreparedWrite { tx in
            guard tx.state.grid.rows.indices.contains(row) else { throw ModelError.notFound("no row \(row)") }
            let col = tx.state.grid.rows[row].count
            guard col < DotGrid.maxDotsPerRow else {
                throw ModelError.unprocessable("row \(row) already has \(DotGrid.maxDotsPerRow) dots")
            }
            let dot = Dot(id: Identifier.make(), isTapAnimated: false, isRandomAnimated: false)
            try Store.insert(dot, row: row, col: col, in: &tx)
            tx.state.grid.append(dot, toRow: row)
            if let placed = tx.state.grid.placedRepresentation(dot.id) {
                tx.insert(into: DotGrid.rowsPath, element: placed)
            }
            return PlacedDot(position: DotPosition(row: row, col: col), dot: dot)
        }
    }
}
