import Foundation
import JSON

/// Loading: the entry points, and how a read's values meet the objects the
/// client already has.
extension ObservableClient {
    /// Loads the truck: its name, menu, order count and newest page of orders
    /// (`Configuration.ordersPageSize`), tracked from now on. Again, the same object.
    public func truck() async throws -> Truck {
        let answer = try await read(firstRead(of: Truck.self))
        let truck = singleton(Truck.self)
        if truck.freshAt < 0 || context(of: answer, force: false).applies {
            truck.nextOrders = answer.nextLink
            truck.orderPages = 1
        }
        take(answer, into: truck)
        loaded.singletons.insert(truck.path)
        return truck
    }

    /// Loads the dot grid, tracked from now on.
    public func grid() async throws -> Grid { try await load(Grid.self) }

    /// Loads who is signed in, tracked from now on.
    public func account() async throws -> Account { try await load(Account.self) }

    /// Loads a model the server has one of (`@RemoteModel("/account")`),
    /// tracked from now on: again, the same object. A collection field marked
    /// `@Paged` holds its newest page (`Configuration.ordersPageSize`).
    public func load<Model: RemoteSingleton>(_ type: Model.Type) async throws -> Model {
        let answer = try await read(firstRead(of: Model.self))
        let object = singleton(Model.self)
        take(answer, into: object)
        loaded.singletons.insert(object.path)
        return object
    }

    /// The read that loads a singleton: its path, with the first page of each paged field.
    func firstRead<Model: RemoteModel>(of type: Model.Type, path: String? = nil) -> String {
        let paged = Model._$schema.fields.filter { $0.kind == .elements(paged: true) }.map(\.name)
        let path = path ?? (Model.self as? any RemoteSingleton.Type)?._$singletonPath ?? ""
        guard !paged.isEmpty else { return path }
        return path + "?" + paged.map { "\($0).limit=\(configuration.ordersPageSize)&\($0).order=desc" }.joined(separator: "&")
    }

    func firstRead<Model: RemoteModel>(of object: Model) -> String { firstRead(of: Model.self, path: object.path) }

    /// Loads every job, tracked from now on: new ones join, deleted ones leave.
    /// With `pageSize`, only the newest page of them, newest first, and
    /// older pages with `loadMore()`. The first load decides which.
    public func jobs(pageSize: Int? = nil) async throws -> JobList { try await list(Job.self, pageSize: pageSize) }

    /// Loads every memory game, as `jobs(pageSize:)` does.
    public func games(pageSize: Int? = nil) async throws -> GameList { try await list(Game.self, pageSize: pageSize) }

    /// Loads every post, as `jobs(pageSize:)` does.
    public func posts(pageSize: Int? = nil) async throws -> PostList { try await list(Post.self, pageSize: pageSize) }

    /// Loads the collection of a model (`@RemoteModel("/posts/{id}")`:
    /// `/posts`), tracked from now on: new elements join, deleted ones leave.
    /// With `pageSize`, only the newest page of them, newest first, and
    /// older pages with `loadMore()`. The first load decides which; again,
    /// the same list.
    public func list<Item: RemoteElement>(_ type: Item.Type, pageSize: Int? = nil) async throws -> RemoteList<Item> {
        let path = Item.collectionPath
        let existing = objects[path] as? RemoteList<Item>
        let size = existing == nil ? pageSize.map { min(max($0, 1), 1000) } : existing?.pageSize
        let query = size.map { "\(path)?limit=\($0)&order=desc" } ?? path
        let answer = try await read(query)
        let list = singleton(RemoteList<Item>.self)
        if list.freshAt < 0 || context(of: answer, force: false).applies {
            list.pageSize = size
            list.nextPage = size == nil ? nil : answer.nextLink
            list.pages = 1
        }
        take(answer, into: list)
        loaded.lists.insert(path)
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
    public func job(id: String) async throws -> Job { try await load(Job.self, id: id) }

    /// Loads one memory game with its cards, tracked from now on.
    public func game(id: String) async throws -> Game { try await load(Game.self, id: id) }

    /// Loads one donut, tracked from now on; the same object as in `truck.donuts`.
    public func donut(id: String) async throws -> Donut { try await load(Donut.self, id: id) }

    /// Loads one element of a collection (`@RemoteModel("/posts/{id}")`) by
    /// its id, tracked from now on: the same object as in the lists that hold it.
    public func load<Item: RemoteElement>(_ type: Item.Type, id: String) async throws -> Item {
        try await loadElement(Item.self, id: id, parent: "")
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
        let added = orders.filter { !known.contains($0.id ?? "") }.map { element(Order.self, $0, parent: truck.path) }
        truck.update(\.orders, \._orders, truck._orders + added)
        truck.nextOrders = answer.nextLink
        truck.orderPages += 1
    }

    func context(of answer: HTTPAnswer, force: Bool) -> ReadContext {
        let cursor = answer.cursor ?? 0
        return ReadContext(applies: force || cursor > self.cursor, cursor: cursor)
    }

    /// The one object of a singleton model, made the first time.
    func singleton<Object: RemoteSingleton>(_ type: Object.Type) -> Object {
        if let object = objects[Object._$singletonPath] as? Object { return object }
        let object = Object(_$client: self)
        objects[object.path] = object
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
        let object = Object(_$id: id, path: path, client: self)
        object.load(json)
        object.freshAt = readContext.cursor
        objects[path] = object
        return object
    }

    /// Drops a removed element (and the elements it holds) from the client's objects.
    func forget(_ path: String) {
        guard let object = objects.removeValue(forKey: path) else { return }
        loaded.elements.remove(path)
        for element in object.heldElements { forget(element.path) }
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
