extension Store {
    /// Signs `userName` in (replacing whoever was signed in).
    public func login(userName: String) throws -> Account {
        try write(Writes.login(userName: userName))
    }

    /// Signs out; signing out when nobody is signed in changes nothing.
    public func logout() throws -> Account {
        try write(Writes.logout())
    }
}

extension Writes {
    /// Signs `userName` in (replacing whoever was signed in).
    public static func login(userName: String) throws -> PreparedWrite<Account> {
        try Store.validateText(userName, "userName")
        return setUserName(userName)
    }

    /// Signs out; signing out when nobody is signed in changes nothing.
    public static func logout() -> PreparedWrite<Account> {
        setUserName(nil)
    }

    private static func setUserName(_ userName: String?) -> PreparedWrite<Account> {
        PreparedWrite { tx in
            let old = tx.state.account.userName
            guard old != userName else { return tx.state.account }
            try tx.execute("UPDATE account SET user_name = ? WHERE id = 1", [userName.sqlValue])
            tx.state.account.userName = userName
            tx.set(Account.userNamePath, old: old.json, new: userName.json)
            return tx.state.account
        }
    }
}
