import JSON

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

/// A write that needs code (tap, choose, progress, login, …): its route,
/// the fields its body takes (checked as a model's are), and what it does.
public struct Action: Sendable {
    public let method: String
    /// `/grid/dots/:id/tap`: `:name` segments are parameters.
    public let pattern: String
    public let input: [Field]
    public let run: @Sendable (ActionInput) throws -> Plan

    /// What an action does: one prepared write, committed with the writes
    /// beside it, or several writes in order.
    public enum Plan: Sendable {
        case write(PreparedWrite<Answer>)
        case writes(@Sendable (Store) throws -> Answer)
    }

    public init(_ method: String, _ pattern: String, input: [Field] = [], run: @escaping @Sendable (ActionInput) throws -> Plan) {
        self.method = method
        self.pattern = pattern
        self.input = input
        self.run = run
    }
}

/// An action's request: its path parameters and its checked body.
public struct ActionInput: Sendable {
    public let parameters: [String: String]
    public let body: ValidatedBody

    public init(parameters: [String: String], body: ValidatedBody) {
        self.parameters = parameters
        self.body = body
    }

    public func parameter(_ name: String) -> String { parameters[name] ?? "" }
}

/// A read that needs code (the grid's rows, posts in columns): its route,
/// the fields `?fields=` may select, and how it renders from the state.
public struct Read: Sendable {
    public let pattern: String
    public let selectableFields: [String]
    public let render: @Sendable (ReadInput, ModelState) throws -> Representation

    public init(_ pattern: String, fields: [String], render: @escaping @Sendable (ReadInput, ModelState) throws -> Representation) {
        self.pattern = pattern
        self.selectableFields = fields
        self.render = render
    }
}

/// A custom read's request.
public struct ReadInput: Sendable {
    public let parameters: [String: String]
    public let query: @Sendable (String) -> String?
    public let selection: FieldSelection

    public init(parameters: [String: String], query: @escaping @Sendable (String) -> String?, selection: FieldSelection) {
        self.parameters = parameters
        self.query = query
        self.selection = selection
    }

    public func parameter(_ name: String) -> String { parameters[name] ?? "" }
}

/// What a write answers: a status, a representation (none for `204`) and,
/// for a creation, where the new resource lives.
public struct Answer: Sendable {
    public var status: Int
    public var body: [UInt8]?
    public var location: String?

    public init(status: Int, body: [UInt8]?, location: String? = nil) {
        self.status = status
        self.body = body
        self.location = location
    }

    public static func ok(_ representation: Representation) -> Answer { Answer(status: 200, body: representation.bytes) }
    public static func created(_ representation: Representation, at location: String) -> Answer {
        Answer(status: 201, body: representation.bytes, location: location)
    }
    public static let noContent = Answer(status: 204, body: nil)
}
