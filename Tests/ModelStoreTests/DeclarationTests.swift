import Foundation
import JSON
@testable import ModelStore
import ModelStoreDatabases
import Testing

/// What the engine derives from a declaration alone, on a store of its own
/// (its tables too): a shelf of boxes, each holding items, with computed counts.
@Suite struct DeclarationTests {
    static let items = Resource.collection("items", element: "item", at: "items", allowing: [.get]) {
        Field.text("label")
        Field.boolean("isPacked", default: false)
    }

    static let boxes = Resource.collection("boxes", element: "box", at: "/shelf/boxes",
                                           allowing: [.list, .create, .get, .patch, .delete]) {
        Field.text("name")
        Field.integer("weightKg", range: 1...50)
        Field.text("note", nullable: true, limits: TextLimits(maxLength: 5))
        items
        Computed("isPacked", .boolean) { _, box in .bool(box[items].values.allSatisfy { $0.bool("isPacked") }) }
    }

    static let shelf = Resource.singleton("shelf", at: "/shelf", allowing: [.get]) {
        boxes
        Computed("boxCount", .integer) { state, _ in .int(Int64(state[boxes].count)) }
    }

    /// A store of the shelf alone: the engine's own tables from the
    /// migrations, the shelf's from its declaration.
    static func store(folder: String = GroupCommitTests.temporaryFolder()) throws -> Store {
        try Store(configuration: Store.Configuration(database: folder + "/shelf.sqlite"),
                  catalog: Catalog(resources: [boxes, shelf], migrations: GroupCommitTests.seedMigrations()))
    }

    static func body(_ json: String, _ fields: [Field], requireAll: Bool = true) throws -> ValidatedBody {
        let object = try #require(try JSONParser.parse(Array(json.utf8)).objectValue)
        return try ValidatedBody(object, fields: fields, requireAll: requireAll)
    }

    /// The changes the store's log holds after `seq`, as `path op old new`.
    static func changes(_ store: Store, after seq: Int64) throws -> [String] {
        try store.writer.withLock { storage in try storage.changes(after: seq) }.map {
            [$0.path.replacingOccurrences(of: #"/[0-9a-f-]{36}"#, with: "/ID", options: .regularExpression),
             $0.operation.rawValue, $0.old ?? "-", $0.new ?? "-"].joined(separator: " ")
        }
    }

    @Test func aColumnIsTheFieldsNameInSnakeCaseUnlessGiven() {
        #expect(Field.text("imageURL").column == "image_url")
        #expect(Field.boolean("isTapAnimated").column == "is_tap_animated")
        #expect(Field.integer("row", column: "grid_row").column == "grid_row")
        #expect(Self.boxes.field("weightKg")?.column == "weight_kg")
    }

    @Test func aBodyIsCheckedUnknownFieldsFirstThenTypesThenEachFieldsRules() throws {
        func status(_ json: String, requireAll: Bool = true) -> Int? {
            do {
                _ = try Self.body(json, Self.boxes.creatableFields, requireAll: requireAll)
                return nil
            } catch let error as ModelError {
                return error.kind == .badRequest ? 400 : error.kind == .unprocessable ? 422 : 0
            } catch {
                return -1
            }
        }
        #expect(status(#"{"name": "a", "weightKg": 2}"#) == nil)
        #expect(status(#"{"name": "a", "weightKg": 2, "colour": "red"}"#) == 400)
        #expect(status(#"{"weightKg": "2"}"#) == 400)  // a wrong type before a missing field
        #expect(status(#"{"weightKg": 2}"#) == 422)  // name is required
        #expect(status(#"{"weightKg": 2}"#, requireAll: false) == nil)  // not for a patch
        #expect(status(#"{"name": " ", "weightKg": 2}"#) == 422)
        #expect(status(#"{"name": "a", "weightKg": 51}"#) == 422)
        #expect(status(#"{"name": "a", "weightKg": 2, "note": "sixsix"}"#) == 422)
        #expect(status(#"{"name": "a", "weightKg": 2, "note": null}"#) == nil)
        #expect(status(#"{"name": null, "weightKg": 2}"#) == 400)
    }

    @Test func writesRecordEachFieldThatMovesAndComputedPropertiesThatMoveAndNothingElse() throws {
        let store = try Self.store()
        defer { store.close() }
        let created = try store.write(Self.boxes.create(Self.body(#"{"name": "Books", "weightKg": 12}"#, Self.boxes.creatableFields)))
        let id = try #require(store.state[Self.boxes].values.first?.id)
        #expect(created.outcome == .created(path: "/shelf/boxes/" + id))
        // An element with items inside it, made by code on the same transaction.
        _ = try store.write { tx in
            var box = Record.new(Self.boxes, [:])
            box["name"] = "Cups"
            box["weightKg"] = 3
            for (position, label) in ["mug", "bowl"].enumerated() {
                var item = Record.new(Self.items, in: box.path, ["label": .string(label)])
                item.position = Int64(position)
                box[Self.items][item.id] = item
            }
            try tx.insert(box, into: Self.boxes)
        }
        let cups = try #require(store.state[Self.boxes].values.last)
        let seq = store.state.seq

        // A patch that changes nothing records nothing.
        _ = try store.write(Self.boxes.patch(id, Self.body(#"{"name": "Books"}"#, Self.boxes.patchableFields, requireAll: false),
                                             onlyIf: nil))
        #expect(try Self.changes(store, after: seq) == [])

        // One change per field that moves, in declared order.
        _ = try store.write(Self.boxes.patch(id, Self.body(#"{"weightKg": 13, "note": "top"}"#, Self.boxes.patchableFields,
                                                           requireAll: false), onlyIf: nil))
        #expect(try Self.changes(store, after: seq) == ["/shelf/boxes/ID/weightKg set 12 13", "/shelf/boxes/ID/note set null \"top\""])

        // Items packed one by one: each field that moves, and the box's
        // computed `isPacked` only when it moves (with the second item).
        for (index, item) in cups[Self.items].values.enumerated() {
            let before = store.state.seq
            _ = try store.write { tx in
                try tx.update(Self.boxes, cups.id) { $0[Self.items][item.id]?["isPacked"] = true }
            }
            let expected = ["/shelf/boxes/ID/items/ID/isPacked set false true"] + (index == 1 ? ["/shelf/boxes/ID/isPacked set false true"] : [])
            #expect(try Self.changes(store, after: before) == expected)
        }

        // Deleting a box is a remove; the singleton's computed count moves with it.
        let before = store.state.seq
        _ = try store.write(Self.boxes.delete(id, onlyIf: nil))
        let removal = try Self.changes(store, after: before)
        #expect(removal.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == ["/shelf/boxes remove", "/shelf/boxCount set"])
        #expect(removal.last == "/shelf/boxCount set 2 1")
    }

    @Test func aStoredModelIsLoadedAgainWithItsNestedElementsInOrder() throws {
        let folder = GroupCommitTests.temporaryFolder()
        let store = try Self.store(folder: folder)
        _ = try store.write { tx in
            var box = Record.new(Self.boxes, ["name": "Tools", "weightKg": 9])
            for (position, label) in ["saw", "drill", "tape"].enumerated() {
                var item = Record.new(Self.items, in: box.path, ["label": .string(label)])
                item.position = Int64(position)
                box[Self.items][item.id] = item
            }
            try tx.insert(box, into: Self.boxes)
        }
        let written = Self.shelf.representation(of: store.state[singleton: Self.shelf], in: store.state)
        store.close()
        let reopened = try Self.store(folder: folder)
        defer { reopened.close() }
        let read = Self.shelf.representation(of: reopened.state[singleton: Self.shelf], in: reopened.state)
        #expect(read.bytes == written.bytes)
        #expect(read.string.contains(#""items":[{"id":"#))
        #expect(read.reads.map(\.path).contains("/shelf/boxCount"))
    }
}
