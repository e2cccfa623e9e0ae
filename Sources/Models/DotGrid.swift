import JSON
import ModelObservation
import SQLiteStore

/// One dot of the grid: two animation flags a client turns on and off.
public struct Dot: Sendable, Equatable {
    public static let fields = ["id", "isTapAnimated", "isRandomAnimated"]
    /// The fields a client may set.
    public static let writableFields = ["isTapAnimated", "isRandomAnimated"]

    public let id: String
    public var isTapAnimated: Bool
    public var isRandomAnimated: Bool

    public var path: String { DotGrid.dotsPath + "/" + id }

    public func value(of field: String) -> JSONValue {
        switch field {
        case "id": return .string(id)
        case "isTapAnimated": return .bool(isTapAnimated)
        case "isRandomAnimated": return .bool(isRandomAnimated)
        default: return .null
        }
    }

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: path)
        builder.constant("id", .string(id))
        for field in Self.writableFields { builder.field(field, value(of: field), selection) }
        return builder.finish()
    }

    /// Every property key of this dot.
    public var keys: [PropertyKey] { Self.writableFields.map { PropertyKey(path, $0) } }
}

/// Where a dot sits: 0-based row and column.
public struct DotPosition: Sendable, Equatable, Hashable {
    public let row: Int
    public let col: Int

    public init(row: Int, col: Int) {
        self.row = row
        self.col = col
    }
}

/// The grid of dots: ragged rows that only grow. Dots never move, so a
/// dot's position is as stable as its id.
public struct DotGrid: Sendable, Equatable {
    public static let path = "/grid"
    public static let rowsPath = "/grid/rows"
    public static let dotsPath = "/grid/dots"
    /// Most dots a row may hold (a new row, or a row grown dot by dot).
    public static let maxDotsPerRow = 100
    /// Most rows the grid may hold.
    public static let maxRows = 1000

    public internal(set) var rows: [[Dot]]
    /// Each dot's position, by id.
    public internal(set) var positions: [String: DotPosition]

    init(rows: [[Dot]]) {
        self.rows = rows
        var positions: [String: DotPosition] = [:]
        for (r, row) in rows.enumerated() {
            for (c, dot) in row.enumerated() { positions[dot.id] = DotPosition(row: r, col: c) }
        }
        self.positions = positions
    }

    public var dotCount: Int { positions.count }

    public subscript(id: String) -> Dot? {
        guard let position = positions[id] else { return nil }
        return rows[position.row][position.col]
    }

    /// The dot at `position`, or nil when the position is outside the grid.
    public func dot(at position: DotPosition) -> Dot? {
        guard rows.indices.contains(position.row), rows[position.row].indices.contains(position.col) else { return nil }
        return rows[position.row][position.col]
    }

    /// Replaces the dot with the same id (which must be in the grid).
    mutating func update(_ dot: Dot) {
        guard let position = positions[dot.id] else { return }
        rows[position.row][position.col] = dot
    }

    mutating func appendRow(_ dots: [Dot]) {
        rows.append([])
        for dot in dots { append(dot, toRow: rows.count - 1) }
    }

    mutating func append(_ dot: Dot, toRow row: Int) {
        positions[dot.id] = DotPosition(row: row, col: rows[row].count)
        rows[row].append(dot)
    }

    /// `GET /grid`: every row; reads the rows' membership and each dot's
    /// selected fields.
    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: Self.path)
        builder.collection("rows", rows.map { Self.dots($0, selection) })
        return builder.finish()
    }

    /// `GET /grid/rows/{r}` and the answer to a new row: `{"row", "dots"}`.
    /// A row grows only by appends to `/grid/rows`, so that is what it reads.
    public func rowRepresentation(_ row: Int, _ selection: FieldSelection = .all) -> Representation {
        let dots = Self.dots(rows[row], selection)
        return Representation(json: ["row": .int(Int64(row)), "dots": dots.json],
                              reads: [PropertyKey(Self.rowsPath)] + dots.reads)
    }

    /// A dot with its position: `{"row", "col", "dot"}`, the answer to
    /// `POST /grid/random` and to appending a dot, and an appended dot's
    /// `insert` change. Position is constant; only the dot's fields are read.
    public func placedRepresentation(_ id: String) -> Representation? {
        guard let position = positions[id], let dot = self[id] else { return nil }
        let representation = dot.representation()
        return Representation(json: ["row": .int(Int64(position.row)), "col": .int(Int64(position.col)), "dot": representation.json],
                              reads: representation.reads)
    }

    private static func dots(_ row: [Dot], _ selection: FieldSelection) -> Representation {
        let elements = row.map { $0.representation(selection) }
        return Representation(json: .array(elements.map(\.json)), reads: elements.flatMap(\.reads))
    }

    static func load(_ database: Database) throws -> DotGrid {
        var rows: [[Dot]] = []
        var current: Int64?
        for row in try database.rows("SELECT id, grid_row, grid_col, is_tap_animated, is_random_animated FROM dots ORDER BY grid_row, grid_col") {
            let dot = Dot(id: row[0].string ?? "", isTapAnimated: (row[3].int64 ?? 0) != 0, isRandomAnimated: (row[4].int64 ?? 0) != 0)
            // Rows are stored 0, 1, 2, … with columns 0, 1, 2, …; a new row
            // index starts a new row, so the grid keeps the stored order.
            if row[1].int64 != current {
                rows.append([])
                current = row[1].int64
            }
            rows[rows.count - 1].append(dot)
        }
        return DotGrid(rows: rows)
    }
}
