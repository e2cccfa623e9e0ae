/// The dot grid (`/grid`): ragged rows of dots, which only grow.
@RemoteModel("/grid")
public final class Grid {
    /// The rows, top to bottom, each a row of dots left to right.
    public var rows: [[Dot]]

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
