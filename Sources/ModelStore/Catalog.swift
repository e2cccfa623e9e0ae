/// The models a store serves: their declarations, the actions and reads
/// that need code, and the background work they run. The API makes every
/// route from it; the store loads and writes every table from it.
public struct Catalog: Sendable {
    /// Top-level models, in the order their routes are matched.
    public let resources: [Resource]
    public let actions: [Action]
    public let reads: [Read]
    public let background: [any BackgroundWork]
    /// The `NNNN_name.sql` files applied in order at start: the engine's
    /// own tables (the change log, observers and their reads) and whatever
    /// only SQL can say. The models' tables are not there: they come from
    /// the declarations (`schema`).
    public let migrations: [(name: String, sql: String)]
    /// The rows the models' tables start with, when they are made.
    public let seed: [Seed]
    let singletons: [Resource]
    private let layouts: [ObjectIdentifier: TableLayout]
    /// By table number: the model, the one it is nested in, and its place there.
    private let tables: [(resource: Resource, parent: Resource?, index: Int)]

    public init(resources: [Resource], actions: [Action] = [], reads: [Read] = [], background: [any BackgroundWork] = [],
                migrations: [(name: String, sql: String)] = [], seed: [Seed] = [])
    {
        self.resources = resources
        self.migrations = migrations
        self.seed = seed
        self.actions = actions
        self.reads = reads
        self.background = background
        singletons = resources.filter { $0.kind == .singleton }
        var layouts: [ObjectIdentifier: TableLayout] = [:]
        var tables: [(resource: Resource, parent: Resource?, index: Int)] = []
        func add(_ resource: Resource, parent: Resource?, index: Int) {
            let parentColumn = parent.map { Field.snakeCase($0.elementName) + "_id" }
            layouts[ObjectIdentifier(resource)] = TableLayout(resource, number: tables.count, parentColumn: parentColumn)
            tables.append((resource, parent, index))
            for (index, nested) in resource.nested.enumerated() { add(nested, parent: resource, index: index) }
        }
        for resource in resources { add(resource, parent: nil, index: 0) }
        self.layouts = layouts
        self.tables = tables
    }

    /// This catalog with the models, actions and reads of `other` after its own.
    public func adding(_ other: Catalog) -> Catalog {
        Catalog(resources: resources + other.resources, actions: actions + other.actions, reads: reads + other.reads,
                background: background + other.background, migrations: migrations + other.migrations, seed: seed + other.seed)
    }

    /// The models' tables, derived from their declarations.
    public var schema: Schema { Schema(self) }

    /// The table numbered `number` (`TableLayout.number`).
    func table(number: Int) -> (resource: Resource, parent: Resource?, index: Int)? {
        tables.indices.contains(number) ? tables[number] : nil
    }

    func layout(of resource: Resource) -> TableLayout {
        guard let layout = layouts[ObjectIdentifier(resource)] else { preconditionFailure("\(resource.name) is not in the catalog") }
        return layout
    }
}
