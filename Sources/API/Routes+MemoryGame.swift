import HTTPServer
import Models

extension ObservableAPI {
    func addMemoryGameRoutes(to router: Router) {
        router.get("/games") { [self] context in
            try read(context, fields: MemoryGame.fields) { state, fields in state.games.list(fields) }
        }
        router.post("/games") { [self] context in
            let body = try RequestBody(context.request, allowed: ["pairs", "seed"])
            guard let pairs = try body.integer("pairs") else { throw APIError(422, "pairs is required") }
            return try commit(context, try Writes.createGame(pairs: pairs, seed: try body.integer("seed"))) { game in
                Self.written(game.representation().bytes, status: 201, location: game.path)
            }
        }
        router.get("/games/:id") { [self] context in
            let id = context.parameter("id")
            return try read(context, fields: MemoryGame.fields) { state, fields in
                guard let game = state.games[id] else { throw APIError(404, "no game \(id)") }
                return game.representation(fields)
            }
        }
        router.delete("/games/:id") { [self] context in
            try commit(context, Writes.deleteGame(context.parameter("id"), ifMatch: context.request.header("If-Match"))) { Self.noContent }
        }
        router.get("/games/:id/cards/:cardId") { [self] context in
            let id = context.parameter("id"), cardId = context.parameter("cardId")
            return try read(context, fields: Card.fields) { state, fields in
                guard let game = state.games[id] else { throw APIError(404, "no game \(id)") }
                guard let card = game.cards[cardId] else { throw APIError(404, "no card \(cardId) in game \(id)") }
                return card.representation(fields)
            }
        }
        router.post("/games/:id/cards/:cardId/choose") { [self] context in
            _ = try RequestBody(context.request, allowed: [], emptyAllowed: true)
            return try commit(context, Writes.chooseCard(context.parameter("cardId"), in: context.parameter("id"))) { game in
                Self.written(game.representation().bytes)
            }
        }
    }
}
