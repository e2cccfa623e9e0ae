/// A dot of the grid (`/grid/dots/{id}`).
@RemoteModel("/grid/dots/{id}")
public final class Dot {
    /// The server's id, which never changes.
    public let id: String
    /// True while a tap animates the dot.
    public var isTapAnimated: Bool
    /// Set by `Grid.random()`; reset with `setRandomAnimated(false)`.
    public var isRandomAnimated: Bool

    /// Taps the dot (`POST /grid/dots/{id}/tap`): `isTapAnimated` turns true,
    /// then false again, two changes the feed brings in order.
    public func tap() async throws {
        try await ObservableClient.write(client, "POST", path + "/tap")
    }

    /// Sets `isRandomAnimated` (`PATCH /grid/dots/{id}` with `If-Match`).
    public func setRandomAnimated(_ value: Bool) async throws {
        try await ObservableClient.write(client, "PATCH", path, body: ["isRandomAnimated": .bool(value)], ifMatch: representation)
    }
}
