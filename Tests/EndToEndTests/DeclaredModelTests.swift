import Foundation
import ModelStore
import Models
import Testing
import TestSupport

/// A model declared here, in the test, and nowhere else: its declaration,
/// its migration and one line of registration are all it takes to be
/// served, stored, validated and observed.
enum TodoList {
    static let items = Resource.collection("items", element: "item", at: "/todo/items", table: "todo_items",
                                           allowing: [.list, .create, .get, .patch, .delete]) {
        Field.text("title")
        isDone
    }
    static let isDone = Stored<Bool>(.boolean("isDone", default: false))

    static let list = Resource.singleton("todo", at: "/todo", allowing: [.get]) {
        items
        Computed("openCount", .integer) { state, _ in .int(Int64(state[items].values.count { !$0[isDone] })) }
    }

    static let migration = """
        CREATE TABLE todo_items (
            id TEXT PRIMARY KEY,
            position INTEGER NOT NULL UNIQUE,
            title TEXT NOT NULL,
            is_done INTEGER NOT NULL DEFAULT 0 CHECK (is_done IN (0, 1))
        );
        """
}

@Suite struct DeclaredModelTests {
    /// A server for the seed systems plus the to-do list: its declaration
    /// and its migration, registered in one line.
    static func server(folder: String = temporaryFolder()) throws -> TestServer {
        try TestServer(folder: folder) { configuration in
            configuration.models = SeedModels.catalog().adding(
                Catalog(resources: [TodoList.items, TodoList.list], migrations: [("0100_todo_items.sql", TodoList.migration)]))
        }
    }

    @Test func aDeclaredModelIsCreatedReadPatchedObservedAndDeleted() throws {
        let server = try Self.server()
        let client = server.client

        let created = try client.post("/todo/items", ["title": "Buy flour"])
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(created.header("Location") == "/todo/items/\(id)")
        #expect(created.json == ["id": .string(id), "title": "Buy flour", "isDone": false])

        let observer = try client.observer()
        let read = try client.get("/todo", observer: observer)
        #expect(read.status == 200)
        #expect(read.json == ["items": [["id": .string(id), "title": "Buy flour", "isDone": false]], "openCount": 1])
        let cursor = try #require(read.cursor)
        let reads = try client.get("/observers/\(observer)").json["reads"]?.arrayValue?.compactMap(\.stringValue)
        #expect(reads == ["/todo/items", "/todo/items/\(id)/isDone", "/todo/items/\(id)/title", "/todo/openCount"])

        // A long-poll parked before the change is answered by it.
        let poll = try TestConnection(port: server.port)
        try poll.send("GET", "/observers/\(observer)/changes?since=\(cursor)&timeout=30")
        try waitUntil { server.application.daemon.parkedCount == 1 }
        let etag = try #require(try client.get("/todo/items/\(id)").header("ETag"))
        #expect(try client.patch("/todo/items/\(id)", ["isDone": true], headers: ["If-Match": "\"0000000000000000\""]).status == 412)
        let patched = try client.patch("/todo/items/\(id)", ["isDone": true], headers: ["If-Match": etag])
        #expect(patched.status == 200)
        #expect(patched.json == ["id": .string(id), "title": "Buy flour", "isDone": true])
        let changes = try poll.receive().json.changeList
        #expect(changes.map { $0.dropping("seq") } == [
            ["path": .string("/todo/items/\(id)/isDone"), "op": "set", "old": false, "new": true],
            ["path": "/todo/openCount", "op": "set", "old": 1, "new": 0],
        ])

        // Rules come from the declaration: a blank title, a wrong type, an unknown field.
        #expect(try client.post("/todo/items", ["title": " "]).status == 422)
        #expect(try client.post("/todo/items", [:]).status == 422)
        #expect(try client.patch("/todo/items/\(id)", ["isDone": "yes"]).status == 400)
        #expect(try client.patch("/todo/items/\(id)", ["owner": "ada"]).status == 400)

        #expect(try client.delete("/todo/items/\(id)").status == 204)
        let removed = try client.changes(observer, since: cursor + 2).json.changeList
        #expect(removed.map { $0["op"] } == ["remove"])
        #expect(removed.first?["path"] == "/todo/items")
        #expect(try client.get("/todo/items/\(id)").status == 404)
        #expect(try client.get("/todo/openCount").json == ["openCount": 0])
    }

    @Test func aDeclaredModelsPartOfTheOpenAPIDocumentComesFromItsDeclaration() throws {
        let server = try Self.server()
        let document = try server.client.get("/openapi.yaml").text
        for line in ["  /todo/items:", "      operationId: listItems", "      operationId: createItem", "  /todo/items/{id}:",
                     "      operationId: updateItem", "      operationId: deleteItem", "  /todo/openCount:",
                     "    ItemSelection:", "    TodoSelection:", "        isDone:", "    ItemIdPath:"]
        {
            #expect(document.contains("\n" + line + "\n"), "\(line) is missing")
        }
    }

    @Test func aDeclaredModelSurvivesARestart() throws {
        let folder = temporaryFolder()
        var server: TestServer? = try Self.server(folder: folder)
        let id = try #require(try server?.client.post("/todo/items", ["title": "Knead"]).json["id"]?.stringValue)
        _ = try server?.client.patch("/todo/items/\(id)", ["isDone": true])
        server?.stop()
        server = nil
        let reopened = try Self.server(folder: folder)
        #expect(try reopened.client.get("/todo/items").json == ["items": [["id": .string(id), "title": "Knead", "isDone": true]]])
    }
}

extension JSONValue {
    /// This object without `key`.
    func dropping(_ key: String) -> JSONValue {
        guard var object = objectValue else { return self }
        object[key] = nil
        return .object(object)
    }
}
