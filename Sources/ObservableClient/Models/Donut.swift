/// A donut on the truck's menu (`/truck/donuts/{id}`).
///
/// One instance per donut for as long as the client holds it: the one in
/// `truck.donuts` is the one every other read returns. Change it with
/// `update(_:)` (`.set(\.topping, nil)`), take it off with `delete()`.
@RemoteModel("/truck/donuts/{id}")
public final class Donut {
    /// The server's id, which never changes.
    public let id: String
    /// The donut's name.
    public var name: String
    /// The dough, `"plain"` unless set.
    public var dough: String
    /// The glaze, if any.
    public var glaze: String?
    /// The topping, if any.
    public var topping: String?

    /// Renames the donut (`PATCH /truck/donuts/{id}` with `If-Match`). The new
    /// name arrives through the feed, as anyone else's change does.
    /// - Throws: `ObservableClientError.conflict` when the donut changed on
    ///   the server since this client last saw it; `.rejected` for a blank or
    ///   too long name.
    public func rename(to name: String) async throws {
        try await update(.set(\.name, name))
    }
}
