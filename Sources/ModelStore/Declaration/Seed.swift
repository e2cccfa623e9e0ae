import JSON

/// A row a model's table starts with: inserted when the table is made from
/// its declaration, never into a table that exists (so a seeded donut
/// deleted stays deleted). A singleton's row 1 takes its seed's values, else
/// its fields' defaults; a top-level collection's seeded elements come in
/// order, with the ids given.
///
/// ```swift
/// Seed(truck, [truckName.with("Food Truck")])
/// Seed(donuts, id: "0d1b6a52-…-0001", [name.with("Glazed"), dough.with("plain")])
/// ```
public struct Seed: Sendable {
    public let resource: Resource
    public let id: String?
    /// By field name; a field left out takes its default.
    public let values: [String: JSONValue]

    /// A field named that `resource` does not declare, an element without
    /// an id, or one of a nested collection stops the server at start.
    public init(_ resource: Resource, id: String? = nil, _ values: [(name: String, value: JSONValue)]) {
        switch resource.kind {
        case .singleton:
            precondition(id == nil, "\(resource.name) is a singleton: its row has no id to give")
        case .collection:
            precondition(id != nil, "a seeded \(resource.elementName) needs its id")
            precondition(resource.isTopLevel, "\(resource.name) is nested: only top-level collections and singletons are seeded")
        }
        for (name, _) in values {
            precondition(resource.field(name) != nil, "\(resource.name) has no field \(name) to seed")
        }
        self.resource = resource
        self.id = id
        self.values = Dictionary(values, uniquingKeysWith: { _, last in last })
    }
}
