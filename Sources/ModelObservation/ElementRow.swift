import JSON

/// What the readers of queries (`ShapeQuery`) need to know of an element a
/// `set` lands on, which the change's path and values do not say: the
/// values of its queryable fields before the change (with its `id`), and,
/// when the change moves one of them, the whole element after it, which a
/// reader it comes into sight of receives as an `insert`.
///
/// Kept among a change's keys as `@/truck/donuts#12 {"t":{…},"a":{…}}` (no
/// property's path starts with `@`, and JSON text holds no line break), so
/// that every engine stores and restores it with them, and a replay from an
/// older cursor or another instance sees what the commit saw.
public struct ElementRow: Sendable, Equatable {
    public let collection: String
    public let position: Int64
    /// The queryable fields' values before the change, and `id`.
    public let values: JSONObject
    /// The element after the change (JSON text), when the change moves a queryable field.
    public let image: String?

    public init(collection: String, position: Int64, values: JSONObject, image: String?) {
        self.collection = collection
        self.position = position
        self.values = values
        self.image = image
    }

    public var key: PropertyKey {
        var object = JSONObject()
        object.append("t", .object(values))
        var text = "@" + collection + "#" + String(position) + " " + JSONWriter.string(.object(object))
        if let image {
            // The image is JSON text already: spliced in, not parsed again.
            text.removeLast()
            text += ",\"a\":" + image + "}"
        }
        return PropertyKey(text)
    }

    public init?(key: PropertyKey) {
        let path = key.path
        guard path.hasPrefix("@"), let space = path.firstIndex(of: " "),
              let mark = path[..<space].lastIndex(of: "#"), let position = Int64(path[path.index(after: mark)..<space]),
              case .object(let object)? = try? JSONParser.parse(String(path[path.index(after: space)...])),
              case .object(let values)? = object["t"]
        else { return nil }
        collection = String(path[path.index(after: path.startIndex)..<mark])
        self.position = position
        self.values = values
        image = object["a"].map { JSONWriter.string($0) }
    }
}

/// An element a change lands on as query shapes see it: its queryable
/// values before and after (nil where it is not in the collection), and
/// its JSON text before and after where the change says it.
struct ElementStates {
    var before: JSONObject?
    var after: JSONObject?
    var beforeImage: String?
    var afterImage: String?
    var id: String?

    /// What `change` does to the element at `place`; nil when the change
    /// says nothing of the element's values (no row was kept).
    init?(_ change: Change, at place: Place) {
        switch change.operation {
        case .insert where change.path == place.collection && place.field == nil:
            guard let new = change.new, case .object(let object)? = try? JSONParser.parse(new) else { return nil }
            after = object
            afterImage = new
            id = object["id"]?.stringValue
        case .remove where change.path == place.collection && place.field == nil:
            guard let old = change.old, case .object(let object)? = try? JSONParser.parse(old) else { return nil }
            before = object
            beforeImage = old
            id = object["id"]?.stringValue
        case .set:
            guard let row = change.rows.first(where: { $0.collection == place.collection && $0.position == place.position }) else { return nil }
            before = row.values
            after = row.values
            id = row.values["id"]?.stringValue
            guard let field = place.field, row.values[field] != nil, let image = row.image,
                  let new = change.new.flatMap({ try? JSONParser.parse($0) }),
                  let old = change.old.flatMap({ try? JSONParser.parse($0) })
            else { return }
            after?[field] = new
            afterImage = image
            if case .object(var object)? = try? JSONParser.parse(image) {
                object[field] = old
                beforeImage = JSONWriter.string(.object(object))
            }
        default:
            return nil
        }
    }
}

extension Shape {
    /// What the reader of this query shape hears of `change` at `place`
    /// (SPEC §3d): an `insert` when the element comes into its copy, a
    /// `remove` when it leaves, the `set` of a shown field of one that
    /// stays; nil for nothing.
    func said(_ change: Change, at place: Place, _ states: ElementStates) -> Change? {
        guard let query else { return nil }
        let wasIn = states.before.map { query.holds($0, at: place.position) } ?? false
        let isIn = states.after.map { query.holds($0, at: place.position) } ?? false
        switch (wasIn, isIn) {
        case (false, true):
            guard let image = states.afterImage else { return nil }
            return Change(said: change, path: collection, operation: .insert, old: nil, new: project(image), query: query.text)
        case (true, false):
            if PlantedFault.current == .queryMissesRemove, change.operation == .set { return nil }
            let old = states.beforeImage.map(project) ?? JSONWriter.string(["id": .string(states.id ?? "")])
            return Change(said: change, path: collection, operation: .remove, old: old, new: nil, query: query.text)
        case (true, true):
            guard change.operation == .set, fields == nil || place.field.map({ fields!.contains($0) }) == true else { return nil }
            return Change(said: change, path: change.path, operation: .set, old: change.old, new: change.new, query: query.text)
        case (false, false):
            return nil
        }
    }

    /// An element's JSON text with only `id` and the fields shown.
    func project(_ image: String) -> String {
        guard let fields, case .object(let object)? = try? JSONParser.parse(image) else { return image }
        var shown = JSONObject()
        for (key, value) in object.entries where key == "id" || fields.contains(key) { shown.append(key, value) }
        return JSONWriter.string(.object(shown))
    }

    /// What its reader hears of `change`, through this query shape, at
    /// each place of the change in its collection.
    func said(_ change: Change) -> Change? {
        for place in change.places where place.collection == collection {
            guard let states = ElementStates(change, at: place) else { continue }
            if let said = said(change, at: place, states) { return said }
        }
        return nil
    }
}
