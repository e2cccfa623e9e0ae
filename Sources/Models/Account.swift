import ModelStore

/// The signed-in user, if any (seed: `Environment(Account.self)`).
public enum Account {
    public static let account = Resource.singleton("account", at: "/account", allowing: [.get]) {
        userName
    }
    public static let userName = Stored<String?>(.text("userName", nullable: true, access: .serverOnly,
                                                       description: "`null` when nobody is signed in."))

    static let actions = [
        Action("/account/login", input: [userName.field.required]) { input in
            .write(signIn(input.body[userName] ?? nil))
        },
        Action("/account/logout") { _ in .write(signIn(nil)) },
    ]

    /// Signs `userName` in, replacing whoever was; nil signs out.
    static func signIn(_ userName: String?) -> PreparedWrite<Answer> {
        PreparedWrite { tx in
            let account = try tx.update(singleton: account) { $0[Self.userName] = userName }
            return .ok(Self.account.representation(of: account, in: tx.state))
        }
    }
}
