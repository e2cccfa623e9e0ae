import JSON
import Observation

/// A dot of the grid (`/grid/dots/{id}`).
public final class Dot: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// True while a tap animates the dot.
    public var isTapAnimated: Bool { noteRead(0, \.isTapAnimated); return _isTapAnimated }
    /// Set by `Grid.random()`; reset with `setRandomAnimated(false)`.
    public var isRandomAnimated: Bool { noteRead(1, \.isRandomAnimated); return _isRandomAnimated }

    var _isTapAnimated = false, _isRandomAnimated = false
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Dot.allFields
    var freshAt: Int64 = -1
    static let fields = ["isTapAnimated", "isRandomAnimated"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { "/grid/dots/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "isTapAnimated": update(\.isTapAnimated, \._isTapAnimated, value.bool)
        case "isRandomAnimated": update(\.isRandomAnimated, \._isRandomAnimated, value.bool)
        default: break
        }
    }

    var representation: JSONValue {
        ["id": .string(id), "isTapAnimated": .bool(_isTapAnimated), "isRandomAnimated": .bool(_isRandomAnimated)]
    }

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
