/// Who is signed in (`/account`).
@RemoteModel("/account")
public final class Account {
    /// The user signed in, or nil.
    public var userName: String?

    /// Signs `userName` in (`POST /account/login`), replacing whoever was.
    public func signIn(userName: String) async throws {
        try await ObservableClient.write(client, "POST", path + "/login", body: ["userName": .string(userName)])
    }

    /// Signs out (`POST /account/logout`).
    public func signOut() async throws {
        try await ObservableClient.write(client, "POST", path + "/logout")
    }
}
