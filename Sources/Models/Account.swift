import JSON
import ModelObservation

/// The signed-in user, if any.
public struct Account: Sendable, Equatable {
    public static let path = "/account"
    public static let userNamePath = "/account/userName"
    public static let fields = ["userName"]

    public var userName: String?

    public func representation(_ selection: FieldSelection = .all) -> Representation {
        var builder = RepresentationBuilder(resource: Self.path)
        builder.field("userName", userName.json, selection)
        return builder.finish()
    }
}
