import HTTPServer
import JSON
import ModelStore

/// The routes every model gets from its declaration, and those of the
/// catalog's hand-written actions and reads.
extension ObservableAPI {
    func addModelRoutes(to router: Router) {
        let catalog = store.catalog
        // Actions and reads first: `/posts/staggered` before `/posts/:id`.
        for action in catalog.actions { add(action, to: router) }
        for read in catalog.reads { add(read, to: router) }
        for resource in catalog.resources { add(resource, to: router) }
    }

    private func add(_ action: Action, to router: Router) {
        // An action is a write that is neither a create, an update nor a
        // delete: a `POST` to its path.
        router.on("POST", action.pattern) { [self] context in
            let body = try RequestBody.validated(context.request, fields: action.input, requireAll: true, emptyAllowed: action.input.isEmpty)
            let input = ActionInput(parameters: context.parameters, body: body)
            switch try action.run(input) {
            case .write(let write):
                return try commit(context, write)
            case .writes(let run):
                return .response(Self.answer(try run(store)))
            }
        }
    }

    private func add(_ read: Read, to router: Router) {
        router.get(read.pattern) { [self] context in
            let query = context.request.query
            return try self.read(context, fields: read.selectableFields) { [parameters = context.parameters] state, selection in
                try read.render(ReadInput(parameters: parameters, query: { query[$0] }, selection: selection), state)
            }
        }
    }

    private func add(_ resource: Resource, to router: Router) {
        let operations = resource.operations
        // A singleton is its own element: `/truck`, where a collection's is `/truck/donuts/:id`.
        let element = resource.kind == .singleton ? resource.path : resource.path + "/:id"
        if operations.contains(.list) {
            router.get(resource.path) { [self] context in
                if let query = try CollectionQuery.parse(context.request, of: resource) {
                    let large = LargeRead { state in min(state[resource].count, query.limit ?? .max) }
                    return try read(context, fields: resource.selectableFields, large: large) { state, selection, output in
                        resource.list(in: state, selection, query: query, output: output)
                    }
                }
                let page = try Page.parse { context.request.query[$0] }
                let large = LargeRead { state in min(state[resource].count, page?.limit ?? .max) }
                return try read(context, fields: resource.selectableFields, large: large) { state, selection, output in
                    resource.list(in: state, selection, page: page, output: output)
                }
            }
        }
        if operations.contains(.create) {
            router.post(resource.path) { [self] context in
                let fields = try RequestBody.validated(context.request, fields: resource.creatableFields, requireAll: true)
                return try commit(context, resource.create(fields))
            }
        }
        if operations.contains(.get) {
            // A singleton's collections (the truck's orders), each shown a page at a time when asked: `orders.limit`, …
            let shownCollections: [Resource] = resource.kind != .singleton ? [] : resource.members.compactMap { member in
                if case .collection(let shown) = member { return shown }
                return nil
            }
            router.get(element) { [self] context in
                let id = context.parameter("id")
                guard !shownCollections.isEmpty else {
                    return try read(context, fields: resource.selectableFields) { state, selection in
                        resource.representation(of: try resource.record(id, in: state), in: state, selection)
                    }
                }
                var pages: [String: Page] = [:]
                for shown in shownCollections {
                    pages[shown.name] = try Page.parse(prefix: shown.name + ".") { context.request.query[$0] }
                }
                // Large with its collections' elements.
                let large = LargeRead { [pages] state in
                    shownCollections.reduce(0) { sum, shown in sum + min(state[shown].count, pages[shown.name]?.limit ?? .max) }
                }
                return try read(context, fields: resource.selectableFields, large: large) { [pages] state, selection, output in
                    resource.representation(of: try resource.record(id, in: state), in: state, selection, pages: pages, output: output)
                }
            }
            for (index, computed) in resource.computed.enumerated() where resource.kind == .singleton {
                let fields = [computed.name]
                router.get(resource.path + "/" + computed.name) { [self] context in
                    try read(context, fields: fields) { state, _ in resource.representation(ofComputed: index, in: state) }
                }
            }
        }
        if operations.contains(.patch) {
            router.patch(element) { [self] context in
                let fields = try RequestBody.validated(context.request, fields: resource.patchableFields, requireAll: false)
                let condition = EntityTag.ifMatch(context.request.header("If-Match"))
                return try commit(context, resource.patch(context.parameter("id"), fields, onlyIf: condition))
            }
        }
        if operations.contains(.delete) {
            router.delete(element) { [self] context in
                let condition = EntityTag.ifMatch(context.request.header("If-Match"))
                return try commit(context, resource.delete(context.parameter("id"), onlyIf: condition))
            }
        }
        for nested in resource.nested where nested.operations.contains(.get) {
            let parameter = nested.elementName + "Id"
            router.get(element + "/" + nested.path + "/:" + parameter) { [self] context in
                let id = context.parameter("id"), nestedId = context.parameter(parameter)
                return try read(context, fields: nested.selectableFields) { state, selection in
                    guard let record = try resource.record(id, in: state)[nested][nestedId] else {
                        throw ModelError.notFound("no \(nested.elementName) \(nestedId) in \(resource.elementName) \(id)")
                    }
                    return nested.representation(of: record, in: state, selection)
                }
            }
        }
    }
}
