import JSON
import Observation

/// A donut on the truck's menu (`/truck/donuts/{id}`).
///
/// One instance per donut for as long as the client holds it: the one in
/// `truck.donuts` is the one every other read returns.
public final class Donut: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// The donut's name.
    public var name: String { noteRead(0, \.name); return _name }
    /// The dough, `"plain"` unless set.
    public var dough: String { noteRead(1, \.dough); return _dough }
    /// The glaze, if any.
    public var glaze: String? { noteRead(2, \.glaze); return _glaze }
    /// The topping, if any.
    public var topping: String? { noteRead(3, \.topping); return _topping }

    var _name = "", _dough = "", _glaze: String?, _topping: String?
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Donut.allFields
    var freshAt: Int64 = -1
    static let fields = ["name", "dough", "glaze", "topping"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { "/truck/donuts/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "name": update(\.name, \._name, value.string)
        case "dough": update(\.dough, \._dough, value.string)
        case "glaze": update(\.glaze, \._glaze, value.optionalString)
        case "topping": update(\.topping, \._topping, value.optionalString)
        default: break
        }
    }

    /// The representation the server would answer for this donut as the
    /// client sees it, for `If-Match`.
    var representation: JSONValue {
        ["id": .string(id), "name": .string(_name), "dough": .string(_dough), "glaze": _glaze.json, "topping": _topping.json]
    }

    /// Renames the donut (`PATCH /truck/donuts/{id}` with `If-Match`). The new
    /// name arrives through the feed, as anyone else's change does.
    /// - Throws: `ObservableClientError.conflict` when the donut changed on
    ///   the server since this client last saw it; `.rejected` for a blank or
    ///   too long name.
    public func rename(to name: String) async throws {
        try await update(name: name)
    }

    /// Changes the fields given (`PATCH /truck/donuts/{id}` with `If-Match`);
    /// `.some(nil)` clears a glaze or topping.
    public func update(name: String? = nil, dough: String? = nil, glaze: String?? = nil, topping: String?? = nil) async throws {
        var body = JSONObject()
        if let name { body["name"] = .string(name) }
        if let dough { body["dough"] = .string(dough) }
        if let glaze { body["glaze"] = glaze.json }
        if let topping { body["topping"] = topping.json }
        try await ObservableClient.write(client, "PATCH", path, body: .object(body), ifMatch: representation)
    }

    /// Takes the donut off the menu (`DELETE /truck/donuts/{id}` with `If-Match`).
    public func delete() async throws {
        try await ObservableClient.write(client, "DELETE", path, ifMatch: representation)
    }
}
