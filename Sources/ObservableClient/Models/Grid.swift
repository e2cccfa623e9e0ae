import JSON
import Observation

/// The dot grid (`/grid`): ragged rows of dots, which only grow.
public final class Grid: RemoteObject, @unchecked Sendable {
    /// The rows, top to bottom, each a row of dots left to right.
    public var rows: [[Dot]] { noteRead(0, \.rows); return _rows }

    var _rows: [[Dot]] = []
    let path = "/grid"
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Grid.allFields
    var freshAt: Int64 = -1
    static let fields = ["rows"]

    init(client: ObservableClient) {
        self.client = client
    }

    func set(_ field: String, _ value: JSONValue) {
        guard field == "rows", let client, let rows = value.arrayValue else { return }
        let new = rows.map { ($0.arrayValue ?? []).map { client.element(Dot.self, $0, parent: path) } }
        setRows(new)
    }

    private func setRows(_ new: [[Dot]]) {
        let same = new.count == _rows.count && zip(new, _rows).allSatisfy { a, b in
            a.count == b.count && zip(a, b).allSatisfy { $0 === $1 }
        }
        guard !same else { return }
        registrar.withMutation(of: self, keyPath: \.rows) { _rows = new }
    }

    func apply(_ change: FeedChange, field: String) {
        guard field == "rows", change.operation == .insert, let client, let new = change.new,
              let row = new["row"]?.intValue.map(Int.init)
        else { return }
        var rows = _rows
        if let dots = new["dots"]?.arrayValue {
            guard row == rows.count else { return }  // already there
            rows.append(dots.map { client.element(Dot.self, $0, parent: path) })
        } else if let dot = new["dot"], let id = dot.id, row < rows.count {
            guard !rows[row].contains(id: id) else { return }
            rows[row].append(client.element(Dot.self, dot, parent: path))
        }
        setRows(rows)
    }

    /// Sets `isRandomAnimated` on one dot chosen at random (`POST /grid/random`).
    public func random() async throws {
        try await ObservableClient.write(client, "POST", path + "/random")
    }

    /// Appends a row of `dots` new dots (`POST /grid/rows`).
    public func appendRow(dots: Int) async throws {
        try await ObservableClient.write(client, "POST", path + "/rows", body: ["dots": .int(Int64(dots))])
    }

    /// Appends a new dot to the row `row` (`POST /grid/rows/{r}/dots`).
    public func appendDot(toRow row: Int) async throws {
        try await ObservableClient.write(client, "POST", path + "/rows/\(row)/dots")
    }
}
