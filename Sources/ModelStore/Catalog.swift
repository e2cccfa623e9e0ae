/// The models a store serves: their declarations, the actions and reads
/// that need code, and the background work they run. The API makes every
/// route from it; the store loads and writes every table from it.
public struct Catalog: Sendable {
    /// Top-level models, in the order their routes are matched.
    public let resources: [Resource]
    public let actions: [Action]
    public let reads: [Read]
    public let background: [any BackgroundWork]
    /// The `NNNN_name.sql` files that make the tables, applied in order at
    /// start (the engine's own tables come with the seed systems' first).
    public let migrations: [(name: String, sql: String)]
    let singletons: [Resource]
    private let layouts: [ObjectIdentifier: TableLayout]

    public init(resources: [Resource], actions: [Action] = [], reads: [Read] = [], background: [any BackgroundWork] = [],
                migrations: [(name: String, sql: String)] = [])
    {
        self.resources = resources
        self.migrations = migrations
        self.actions = actions
        self.reads = reads
        self.background = background
        singletons = resources.filter { $0.kind == .singleton }
        var layouts: [ObjectIdentifier: TableLayout] = [:]
        func add(_ resource: Resource, parentColumn: String?) {
            layouts[ObjectIdentifier(resource)] = TableLayout(resource, number: layouts.count, parentColumn: parentColumn)
            for nested in resource.nested { add(nested, parentColumn: Field.snakeCase(resource.elementName) + "_id") }
        }
        for resource in resources { add(resource, parentColumn: nil) }
        self.layouts = layouts
    }

    /// This catalog with the models, actions and reads of `other` after its own.
    public func adding(_ other: Catalog) -> Catalog {
        Catalog(resources: resources + other.resources, actions: actions + other.actions, reads: reads + other.reads,
                background: background + other.background, migrations: migrations + other.migrations)
    }

    func layout(of resource: Resource) -> TableLayout {
        guard let layout = layouts[ObjectIdentifier(resource)] else { preconditionFailure("\(resource.name) is not in the catalog") }
        return layout
    }
}

/// Work a model runs beside requests (advancing jobs), started once the
/// store serves and stopped before it closes.
public protocol BackgroundWork: Sendable {
    func start(_ store: Store)
    func stop()
}
