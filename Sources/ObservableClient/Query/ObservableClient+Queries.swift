import JSON

/// Query reads (docs/API.md, "Queries") as live lists: the conditions and
/// sort are those of the server's query grammar, on the fields each model
/// declares queryable (orders: `donutId`, `quantity`; donuts: `dough`,
/// `glaze`, `topping`; jobs: `isComplete`; games: `isOver`; posts:
/// `height`). A condition or sort the server refuses throws `.badRequest`.
extension ObservableClient {
    /// The orders that meet `conditions`, in `sort`'s order (creation
    /// order without one), the first `limit` of them (all without one),
    /// kept current: `client.orders(where: [.equal("donutId", donut.id)], sortedBy: .descending("quantity"))`.
    public func orders(where conditions: [QueryCondition] = [], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Order>
    {
        try await queryList("/truck/orders", "orders", conditions, sort, limit) { $0.element(Order.self, $1, parent: "/truck") }
    }

    /// The donuts that meet `conditions`, in `sort`'s order, kept current.
    public func donuts(where conditions: [QueryCondition] = [], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Donut>
    {
        try await queryList("/truck/donuts", "donuts", conditions, sort, limit) { $0.element(Donut.self, $1, parent: "/truck") }
    }

    /// The jobs that meet `conditions` (`.equal("isComplete", false)`: the
    /// jobs still running), in `sort`'s order, kept current.
    public func jobs(where conditions: [QueryCondition], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Job>
    {
        try await queryList("/jobs", "jobs", conditions, sort, limit) { $0.element(Job.self, $1, parent: "/jobs") }
    }

    /// The memory games that meet `conditions`, in `sort`'s order, kept current.
    public func games(where conditions: [QueryCondition], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Game>
    {
        try await queryList("/games", "games", conditions, sort, limit) { $0.element(Game.self, $1, parent: "/games") }
    }

    /// The posts that meet `conditions`, in `sort`'s order, kept current:
    /// `client.posts(sortedBy: .descending("height"), limit: 10)`, the ten tallest.
    public func posts(where conditions: [QueryCondition] = [], sortedBy sort: QuerySort?, limit: Int? = nil)
        async throws -> QueryList<Post>
    {
        try await queryList("/posts", "posts", conditions, sort, limit) { $0.element(Post.self, $1, parent: "/posts") }
    }

    /// Reads a query with the observer; the one list of that read (the same
    /// collection, conditions, sort and limit), taking the answer.
    func queryList<Item>(_ collection: String, _ listKey: String, _ conditions: [QueryCondition], _ sort: QuerySort?, _ limit: Int?,
                         element: @escaping (ObservableClient, JSONValue) -> Item) async throws -> QueryList<Item>
    {
        let key = QueryKey(conditions: conditions, sort: sort)
        let name = collection + "?" + key.text
        let read = QueryList<Item>.read(collection, key, limit: limit.map { min(max($0, 1), 1000) })
        let answer = try await self.read(read)
        // The list of this read, or a new one (in place of one with another limit).
        let list = (queryLists[name] as? QueryList<Item>).flatMap { $0.read == read ? $0 : nil }
            ?? QueryList(client: self, collection: collection, listKey: listKey, key: key, read: read, element: element)
        readContext = context(of: answer, force: false)
        defer { readContext = ReadContext(applies: false, cursor: 0) }
        if list.freshAt < 0 || readContext.applies { list.take(answer, from: self) }
        queryLists[name] = list
        return list
    }

    /// The query list of `query` whose collection holds the element at `path` (`/truck/orders/{id}/quantity`).
    func queryList(holding path: String, query: String) -> (any AnyQueryList)? {
        guard let slash = path.lastIndex(of: "/") else { return nil }
        let element = path[..<slash]
        guard let split = element.lastIndex(of: "/") else { return nil }
        return queryLists[String(element[..<split]) + "?" + query]
    }
}
