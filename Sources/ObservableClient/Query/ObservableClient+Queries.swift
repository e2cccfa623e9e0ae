import JSON

/// Query reads (docs/API.md, "Queries") as live lists: the conditions and
/// sort are those of the server's query grammar, on the fields each model
/// declares queryable (docs/API.md lists them). A condition or sort the
/// server refuses throws `.badRequest`.
extension ObservableClient {
    /// The elements of `Item`'s collection (`@RemoteModel("/posts/{id}")`:
    /// `/posts`) that meet `conditions`, in `sort`'s order (creation order
    /// without one), the first `limit` of them (all without one), kept
    /// current: `client.query(Post.self, sortedBy: .descending("height"), limit: 10)`.
    public func query<Item: RemoteElement>(_ type: Item.Type, where conditions: [QueryCondition] = [], sortedBy sort: QuerySort? = nil,
                                           limit: Int? = nil) async throws -> QueryList<Item>
    {
        try await queryList(Item.collectionPath, Item.collectionKey, conditions, sort, limit) { $0.element(Item.self, $1, parent: "") }
    }

    /// The orders that meet `conditions`, in `sort`'s order, kept current:
    /// `client.orders(where: [.equal("donutId", .text(donut.id))], sortedBy: .descending("quantity"))`.
    public func orders(where conditions: [QueryCondition] = [], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Order>
    {
        try await query(Order.self, where: conditions, sortedBy: sort, limit: limit)
    }

    /// The donuts that meet `conditions`, in `sort`'s order, kept current.
    public func donuts(where conditions: [QueryCondition] = [], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Donut>
    {
        try await query(Donut.self, where: conditions, sortedBy: sort, limit: limit)
    }

    /// The jobs that meet `conditions` (`.equal("isComplete", false)`: the
    /// jobs still running), in `sort`'s order, kept current.
    public func jobs(where conditions: [QueryCondition], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Job>
    {
        try await query(Job.self, where: conditions, sortedBy: sort, limit: limit)
    }

    /// The memory games that meet `conditions`, in `sort`'s order, kept current.
    public func games(where conditions: [QueryCondition], sortedBy sort: QuerySort? = nil, limit: Int? = nil)
        async throws -> QueryList<Game>
    {
        try await query(Game.self, where: conditions, sortedBy: sort, limit: limit)
    }

    /// The posts that meet `conditions`, in `sort`'s order, kept current:
    /// `client.posts(sortedBy: .descending("height"), limit: 10)`, the ten tallest.
    public func posts(where conditions: [QueryCondition] = [], sortedBy sort: QuerySort?, limit: Int? = nil)
        async throws -> QueryList<Post>
    {
        try await query(Post.self, where: conditions, sortedBy: sort, limit: limit)
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
