import HTTPServer
import Models

extension ObservableAPI {
    func addAccountRoutes(to router: Router) {
        router.get("/account") { [self] context in
            try read(context, fields: Account.fields) { state, fields in state.account.representation(fields) }
        }
        router.post("/account/login") { [self] context in
            let body = try RequestBody(context.request, allowed: ["userName"])
            guard let userName = try body.string("userName") else { throw APIError(422, "userName is required") }
            return try commit(context, try Writes.login(userName: userName)) { account in Self.written(account.representation().bytes) }
        }
        router.post("/account/logout") { [self] context in
            _ = try RequestBody(context.request, allowed: [], emptyAllowed: true)
            return try commit(context, Writes.logout()) { account in Self.written(account.representation().bytes) }
        }
    }
}
