/// An order placed at the truck (`/truck/orders/{id}`). Orders never change;
/// they are placed and cancelled.
@RemoteModel("/truck/orders/{id}")
public final class Order {
    /// The server's id, which never changes.
    public let id: String
    /// The id of the donut ordered.
    public var donutId: String
    /// How many, 1…1000.
    public var quantity: Int

    /// Cancels the order (`DELETE /truck/orders/{id}` with `If-Match`). It
    /// leaves `truck.orders` when the feed brings its removal.
    public func cancel() async throws {
        try await delete()
    }
}
