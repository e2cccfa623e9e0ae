import Foundation
import JSON

/// Loading: the entry points, and how a read's values meet the objects the
/// client already has.
extension ObservableClient {
    /// Loads the truck: its name, menu, order count and newest page of orders
    /// (`Configuration.ordersPageSize`), tracked from now on. Again, the same object.
    public func truck() async throws -> Truck {
        let answer = try await read("/truck?orders.limit=\(configuration.ordersPageSize)&orders.order=desc")
        let truck = singleton(Truck.self, "/truck") { Truck(client: self) }
        if truck.freshAt < 0 || context(of: answer, force: false).applies {
            truck.nextOrders = answer.nextLink
            truck.orderPages = 1
        }
        take(answer, into: truck)
        loaded.truck = true
        return truck
    }

    /// Loads the dot grid, tracked from now on.
    public func grid() async throws -> Grid {
        try await loadSingleton("/grid", noting: \.grid) { Grid(client: self) }
    }

    /// Loads who is signed in, tracked from now on.
    public func account() async throws -> Account {
        try await loadSingleton("/account", noting: \.account) { Account(client: self) }
    }

    /// Reads the singleton at `path` into its one object, made with `make`
    /// the first time, and notes it as loaded (to read again with a new observer).
    func loadSingleton<Object: RemoteObject>(_ path: String, noting flag: WritableKeyPath<LoadedResources, Bool>,
                                              make: () -> Object) async throws -> Object
    {
        let answer = try await read(path)
        let object = singleton(Object.self, path, make: make)
        take(answer, into: object)
        loaded[keyPath: flag] = true
        return object
    }

    /// Loads every job, tracked from now on: new ones join, deleted ones leave.
    /// With `pageSize`, only the newest page of them, newest first, and
    /// older pages with `loadMore()`. The first load decides which.
    public func jobs(pageSize: Int? = nil) async throws -> JobList {
        try await loadList(JobList.self, "/jobs", pageSize: pageSize) { JobList(client: self) }
    }

    /// Loads every memory game, tracked from now on: new ones join, deleted ones leave.
    /// With `pageSize`, only the newest page of them, newest first, and
    /// older pages with `loadMore()`. The first load decides which.
    public func games(pageSize: Int? = nil) async throws -> GameList {
        try await loadList(GameList.self, "/games", pageSize: pageSize) { GameList(client: self) }
    }

    /// Loads every post, tracked from now on: new ones join, deleted ones leave.
    /// With `pageSize`, only the newest page of them, newest first, and
    /// older pages with `loadMore()`. The first load decides which.
    public func posts(pageSize: Int? = nil) async throws -> PostList {
        try await loadList(PostList.self, "/posts", pageSize: pageSize) { PostList(client: self) }
    }

    func loadList<List: PagedList>(_ type: List.Type, _ path: String, pageSize: Int?, make: () -> List) async throws -> List {
        let existing = objects[path] as? List
        let size = existing == nil ? pageSize.map { min(max($0, 1), 1000) } : existing?.pageSize
        let query = size.map { "\(path)?limit=\($0)&order=desc" } ?? path
        let answer = try await read(query)
        let list = singleton(List.self, path, make: make)
        if list.freshAt < 0 || context(of: answer, force: false).applies {
            list.pageSize = size
            list.nextPage = size == nil ? nil : answer.nextLink
            list.pages = 1
        }
        take(answer, into: list)
        return list
    }

    /// Loads one more page into a list loaded a page at a time.
    func loadPage(_ next: String, into list: some PagedList) async throws {
        let answer = try await read(next)
        guard next == list.nextPage, let elements = answer.json?[type(of: list).fields[0]]?.arrayValue else { return }
        readContext = ReadContext(applies: true, cursor: answer.cursor ?? 0)
        defer { readContext = ReadContext(applies: false, cursor: 0) }
        list.append(page: elements)
        list.nextPage = answer.nextLink
        list.pages += 1
    }

    /// Reads `first` and the `pages - 1` pages after it: their elements
    /// under `key`, the last `Link`, and the first answer.
    func readPages(_ first: String, pages: Int, key: String) async throws -> (elements: [JSONValue], next: String?, first: HTTPAnswer) {
        let answer = try await read(first)
        var elements = answer.json?[key]?.arrayValue ?? []
        var next = answer.nextLink
        for _ in 1..<max(pages, 1) {
            guard let link = next else { break }
            let page = try await read(link)
            elements += page.json?[key]?.arrayValue ?? []
            next = page.nextLink
        }
        return (elements, next, answer)
    }

    /// Loads one job, tracked from now on.
    public func job(id: String) async throws -> Job {
        try await loadElement(Job.self, id: id, parent: "/jobs")
    }

    /// Loads one memory game with its cards, tracked from now on.
    public func game(id: String) async throws -> Game {
        try await loadElement(Game.self, id: id, parent: "/games")
    }

    /// Loads one donut, tracked from now on; the same object as in `truck.donuts`.
    public func donut(id: String) async throws -> Donut {
        try await loadElement(Donut.self, id: id, parent: "/truck")
    }

    func loadElement<Object: Element>(_ type: Object.Type, id: String, parent: String) async throws -> Object {
        let path = Object.path(id: id, parent: parent)
        let answer = try await read(path)
        guard let json = answer.json else { throw ObservableClientError.unreachable("\(path) answered no JSON") }
        // An object not tracked whole (it left a query, or was narrowed) is
        // behind the feed: the read's values are taken.
        let behind = objects[path].map { $0.trackedMask != Swift.type(of: $0).allFields } ?? false
        readContext = context(of: answer, force: behind)
        defer { readContext = ReadContext(applies: false, cursor: 0) }
        let object = element(Object.self, json, parent: parent)
        loaded.elements.insert(path)
        return object
    }

    /// Loads one more page of orders into `truck`.
    func loadOrdersPage(_ next: String, into truck: Truck) async throws {
        let answer = try await read(next)
        guard next == truck.nextOrders, let orders = answer.json?["orders"]?.arrayValue else { return }
        readContext = ReadContext(applies: true, cursor: answer.cursor ?? 0)
        defer { readContext = ReadContext(applies: false, cursor: 0) }
        let known = Set(truck._orders.map(\.id))
        let added = orders.filter { !known.contains($0.id ?? "") }.map { element(Order.self, $0, parent: "/truck") }
        truck.update(\.orders, \._orders, truck._orders + added)
        truck.nextOrders = answer.nextLink
        truck.orderPages += 1
    }

    func context(of answer: HTTPAnswer, force: Bool) -> ReadContext {
        let cursor = answer.cursor ?? 0
        return ReadContext(applies: force || cursor > self.cursor, cursor: cursor)
    }

    /// The object at `path`, made the first time.
    func singleton<Object: RemoteObject>(_ type: Object.Type, _ path: String, make: () -> Object) -> Object {
        if let object = objects[path] as? Object { return object }
        let object = make()
        objects[path] = object
        return object
    }

    /// Takes a read's values into `object`, when they are newer than what it holds.
    func take(_ answer: HTTPAnswer, into object: some RemoteObject, force: Bool = false) {
        guard let json = answer.json else { return }
        let context = context(of: answer, force: force)
        let isNew = object.freshAt < 0
        guard context.applies || isNew else { return }
        readContext = ReadContext(applies: true, cursor: context.cursor)
        defer { readContext = ReadContext(applies: false, cursor: 0) }
        object.load(json)
        object.freshAt = max(object.freshAt, context.cursor)
    }

    /// The object for an element's JSON: the one the client has for its id,
    /// or a new one. A read that applies (`readContext`) updates one it has.
    func element<Object: Element>(_ type: Object.Type, _ json: JSONValue, parent: String) -> Object {
        let id = json.id ?? ""
        let path = Object.path(id: id, parent: parent)
        if let object = objects[path] as? Object {
            if readContext.applies {
                object.load(json)
                object.freshAt = max(object.freshAt, readContext.cursor)
                object.trackedMask = Object.allFields
            }
            return object
        }
        let object = Object(id: id, path: path, client: self)
        object.load(json)
        object.freshAt = readContext.cursor
        objects[path] = object
        return object
    }

    /// Drops a removed element (and what it holds) from the client's objects.
    func forget(_ path: String) {
        if let game = objects[path] as? Game {
            for card in game._cards { objects[card.path] = nil }
        }
        objects[path] = nil
        loaded.elements.remove(path)
    }

    /// The object a write answered made, read with the observer so it is
    /// tracked: the same object the feed's insert will bring.
    static func created<Object: Element>(_ client: ObservableClient?, _ type: Object.Type, _ json: JSONValue?, parent: String)
        async throws -> Object
    {
        guard let client else { throw ObservableClientError.closed }
        guard let id = json?.id else { throw ObservableClientError.unreachable("the answer named no id") }
        return try await client.loadElement(Object.self, id: id, parent: parent)
    }
}
