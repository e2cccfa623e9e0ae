import JSON
import ModelObservation

extension Store {
    /// The elements `shape`'s window holds in `state`, with their
    /// declaration, oldest first (none when no collection has its path).
    /// Nil too when it holds more than `limit`.
    static func elements(of shape: Shape, in state: ModelState, _ catalog: Catalog, limit: Int = .max) -> (Resource, [Record])? {
        guard let (resource, elements) = collection(at: shape.collection, in: state, catalog) else { return nil }
        if let query = shape.query {
            // A query's: those that match in its window, in its order.
            let found = resource.queryElements(in: state, query, limit: limit == .max ? nil : limit)
            guard found.count <= limit else { return nil }
            return (resource, found.map(\.record))
        }
        var found: [Record] = []
        var tooMany = false
        elements.forEach(from: { $0.position >= shape.from }) { element in
            guard element.position <= shape.through else { return false }
            guard found.count < limit else {
                tooMany = true
                return false
            }
            found.append(element)
            return true
        }
        return tooMany ? nil : (resource, found)
    }

    /// The collection at `path`: a top-level one (`/truck/orders`), or
    /// one nested in an element of one (`/games/{id}/cards`).
    static func collection(at path: String, in state: ModelState, _ catalog: Catalog)
        -> (Resource, PersistentOrderedDictionary<String, Record>)?
    {
        for resource in catalog.resources where resource.kind == .collection {
            if resource.path == path { return (resource, state[resource]) }
            guard path.hasPrefix(resource.path + "/") else { continue }
            let rest = path.dropFirst(resource.path.count + 1).split(separator: "/", omittingEmptySubsequences: false)
            guard rest.count == 2, let element = state[resource][String(rest[0])],
                  let index = resource.nested.firstIndex(where: { $0.name == rest[1] }) else { continue }
            return (resource.nested[index], element.children[index])
        }
        return nil
    }

    /// How many properties `GET /observers/{id}` lists at most for the
    /// shapes an observer reads; past that, a shape is listed by its
    /// collection's path alone (and always in `shapes`).
    public static let listedShapeReads = 10_000

    /// What observer `observer` reads, as `GET /observers/{id}` lists it:
    /// the paths of the properties it read, those its shapes cover now
    /// (each shape's collection path, then every shown field of every
    /// element its window holds) while they number at most
    /// `listedShapeReads`, and each shape as it was read.
    public func describeReads(of observer: ObserverSnapshot) -> (reads: [String], shapes: [JSONValue]) {
        let state = snapshot.state
        var paths = Set<String>()
        var budget = Self.listedShapeReads
        var shapes: [(Shape, Int64)] = []
        for (key, seq) in observer.reads {
            if let shape = Shape(key: key) {
                shapes.append((shape, seq))
            } else if !key.isPlace {
                paths.insert(key.path)
            }
        }
        shapes.sort { $0.0.key.path < $1.0.key.path }
        // The removes since the earliest of its shapes, found in one pass.
        let removals = shapes.isEmpty ? []
            : registry.changes(after: shapes.map(\.1).min() ?? 0, landingIn: Set(shapes.map(\.0.collection)), operation: .remove)
        for (shape, seq) in shapes {
            paths.insert(shape.collection)
            // Listed whole or not at all: about one entry per member of each element.
            let perElement = max(1, resource(at: shape)?.fieldNames.count ?? 1)
            guard budget > 0, let (resource, elements) = Self.elements(of: shape, in: state, catalog, limit: budget / perElement) else { continue }
            for element in elements {
                // Made since the read: every field came with its insert.
                let selection = element.position > shape.newest ? FieldSelection.all : FieldSelection(shapeFields: shape.fields)
                for key in resource.propertyKeys(of: element, in: state, selection) { paths.insert(key.path) }
            }
            // Elements it saw that are gone since (while the log holds their removal).
            for removal in removals where removal.seq > seq
                && removal.places.contains(where: { $0.collection == shape.collection && shape.covers($0) })
            {
                for key in removal.keys where !key.isPlace && key.path != shape.collection {
                    guard let fields = shape.fields else {
                        paths.insert(key.path)
                        continue
                    }
                    let name = key.path.split(separator: "/").last.map(String.init) ?? ""
                    let position = removal.places.first { $0.collection == shape.collection }?.position ?? .min
                    if position > shape.newest || fields.contains(name), key.path.hasPrefix(shape.collection + "/") { paths.insert(key.path) }
                }
            }
            budget -= elements.count * perElement
        }
        return (paths.sorted(), shapes.map { Self.json($0.0) })
    }

    /// The declaration of the elements of `shape`'s collection.
    private func resource(at shape: Shape) -> Resource? {
        Self.collection(at: shape.collection, in: snapshot.state, catalog)?.0
    }

    static func json(_ shape: Shape) -> JSONValue {
        if let query = shape.query {
            // A query's window is in its sort keys, given as a page's cursor would be.
            func bound(_ bound: ShapeQuery.Bound?) -> JSONValue {
                guard let bound else { return .null }
                return query.sort == nil ? .int(bound.key.position) : .string(QueryCursor.text(bound.key))
            }
            return [
                "collection": .string(shape.collection),
                "fields": shape.fields.map { .array($0.map(JSONValue.string)) } ?? .null,
                "query": .string(query.text),
                "from": bound(query.lower),
                "through": bound(query.upper),
            ]
        }
        return [
            "collection": .string(shape.collection),
            "fields": shape.fields.map { .array($0.map(JSONValue.string)) } ?? .null,
            "from": shape.from == .min ? .null : .int(shape.from),
            "through": shape.through == .max ? .null : .int(shape.through),
        ]
    }
}

extension FieldSelection {
    /// The selection a shape's fields name (all for nil).
    init(shapeFields: [String]?) {
        self = shapeFields.map { FieldSelection(names: Set($0)) } ?? .all
    }
}
