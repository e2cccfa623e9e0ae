import JSON

/// What the readers of queries (`ShapeQuery`) need to know of an element a
/// `set` lands on, which the change's path and values do not say: the
/// values of its queryable fields (with its `id`) before the write the
/// change is part of, and after it where they moved; on the element's last
/// change in the write (`last`), when they moved, the whole element after
/// the write, which a reader it comes into sight of receives as an
/// `insert`, and before it, which one it leaves receives as a `remove`. A
/// query's reader hears what the whole write does to its copy: an element
/// that a write moves in and out again is not said to it at all.
///
/// Kept among a change's keys as `@/truck/donuts#12 {"t":{…},…}` (no
/// property's path starts with `@`, and JSON text holds no line break), so
/// that every engine stores and restores it with them, and a replay from an
/// older cursor or another instance sees what the commit saw.
public struct ElementRow: Sendable, Equatable {
    public let collection: String
    public let position: Int64
    /// The queryable fields' values before the write, and `id`.
    public let values: JSONObject
    /// The same after the write; nil when none moved.
    public let final: JSONObject?
    /// Whether this is the element's last change in the write.
    public let last: Bool
    /// The element after the write (JSON text), on its last change when `final` is given.
    public let image: String?
    /// The element before the write (JSON text), likewise.
    public let oldImage: String?

    public init(collection: String, position: Int64, values: JSONObject, final: JSONObject?, last: Bool, image: String?, oldImage: String?) {
        self.collection = collection
        self.position = position
        self.values = values
        self.final = final
        self.last = last
        self.image = image
        self.oldImage = oldImage
    }

    public var key: PropertyKey {
        var object = JSONObject()
        object.append("t", .object(values))
        if let final { object.append("f", .object(final)) }
        if last { object.append("l", true) }
        var text = "@" + collection + "#" + String(position) + " " + JSONWriter.string(.object(object))
        // The images are JSON text already: spliced in, not parsed again.
        if let image, let oldImage {
            text.removeLast()
            text += ",\"a\":" + image + ",\"o\":" + oldImage + "}"
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
        if case .object(let final)? = object["f"] { self.final = final } else { final = nil }
        last = object["l"] == .bool(true)
        image = object["a"].map { JSONWriter.string($0) }
        oldImage = object["o"].map { JSONWriter.string($0) }
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
    /// Whether the change is the element's last in its write: where a
    /// query's reader hears it come or go.
    var last = true

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
            after = row.final ?? row.values
            id = row.values["id"]?.stringValue
            last = row.last
            afterImage = row.image
            beforeImage = row.oldImage
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
        guard let query, let operation = effect(of: change, at: place, states) else { return nil }
        switch operation {
        case .insert:
            return Change(said: change, path: collection, operation: .insert, old: nil, new: project(states.afterImage ?? "{}"), query: query.text)
        case .remove:
            let old = states.beforeImage.map(project) ?? JSONWriter.string(["id": .string(states.id ?? "")])
            return Change(said: change, path: collection, operation: .remove, old: old, new: nil, query: query.text)
        default:
            return Change(said: change, path: change.path, operation: .set, old: change.old, new: change.new, query: query.text)
        }
    }

    /// What its reader hears of `change` at `place`, without saying it:
    /// `insert`, `remove`, `set` or nothing (nil).
    func effect(of change: Change, at place: Place, _ states: ElementStates) -> Change.Operation? {
        guard let query else { return nil }
        let wasIn = states.before.map { query.holds($0, at: place.position) } ?? false
        let isIn = states.after.map { query.holds($0, at: place.position) } ?? false
        switch (wasIn, isIn) {
        case (false, true):
            return states.last && states.afterImage != nil ? .insert : nil
        case (true, false):
            guard states.last else { return nil }
            if PlantedFault.current == .queryMissesRemove, change.operation == .set { return nil }
            return .remove
        case (true, true):
            guard change.operation == .set, fields == nil || place.field.map({ fields!.contains($0) }) == true else { return nil }
            return .set
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

    /// Whether its reader hears something of `change` through this query shape.
    func hears(_ change: Change) -> Bool {
        for place in change.places where place.collection == collection {
            guard let states = ElementStates(change, at: place) else { continue }
            if effect(of: change, at: place, states) != nil { return true }
        }
        return false
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
