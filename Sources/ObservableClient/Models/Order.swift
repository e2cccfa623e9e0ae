import JSON
import Observation

/// An order placed at the truck (`/truck/orders/{id}`). Orders never change;
/// they are placed and cancelled.
public final class Order: Element, Identifiable, @unchecked Sendable {
    /// The server's id, which never changes.
    public let id: String
    /// The id of the donut ordered.
    public var donutId: String { noteRead(0, \.donutId); return _donutId }
    /// How many, 1…1000.
    public var quantity: Int { noteRead(1, \.quantity); return _quantity }

    var _donutId = "", _quantity = 0
    let path: String
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Order.allFields
    var freshAt: Int64 = -1
    static let fields = ["donutId", "quantity"]

    init(id: String, path: String, client: ObservableClient) {
        self.id = id
        self.path = path
        self.client = client
    }

    static func path(id: String, parent: String) -> String { "/truck/orders/" + id }

    func set(_ field: String, _ value: JSONValue) {
        switch field {
        case "donutId": update(\.donutId, \._donutId, value.string)
        case "quantity": update(\.quantity, \._quantity, value.int)
        default: break
        }
    }

    var representation: JSONValue { ["id": .string(id), "donutId": .string(_donutId), "quantity": .int(Int64(_quantity))] }

    /// Cancels the order (`DELETE /truck/orders/{id}` with `If-Match`). It
    /// leaves `truck.orders` when the feed brings its removal.
    public func cancel() async throws {
        try await ObservableClient.write(client, "DELETE", path, ifMatch: representation)
    }
}
