import JSON
import Observation

/// Who is signed in (`/account`).
public final class Account: RemoteObject, @unchecked Sendable {
    /// The user signed in, or nil.
    public var userName: String? { noteRead(0, \.userName); return _userName }

    var _userName: String?
    let path = "/account"
    let registrar = ObservationRegistrar()
    weak var client: ObservableClient?
    var readMask: UInt16 = 0, trackedMask: UInt16 = Account.allFields
    var freshAt: Int64 = -1
    static let fields = ["userName"]

    init(client: ObservableClient) {
        self.client = client
    }

    func set(_ field: String, _ value: JSONValue) {
        if field == "userName" { update(\.userName, \._userName, value.optionalString) }
    }

    /// Signs `userName` in (`POST /account/login`), replacing whoever was.
    public func signIn(userName: String) async throws {
        try await ObservableClient.write(client, "POST", path + "/login", body: ["userName": .string(userName)])
    }

    /// Signs out (`POST /account/logout`).
    public func signOut() async throws {
        try await ObservableClient.write(client, "POST", path + "/logout")
    }
}
