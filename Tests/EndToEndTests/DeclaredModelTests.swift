import Foundation
import ModelStore
import Models
import Testing
import TestSupport

/// A model declared here, in the test, and nowhere else: its declaration
/// and one line of registration are all it takes to be served, stored
/// (its table made from the declaration), validated and observed.
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
}

@Suite struct DeclaredModelTests {
    /// A server for the seed systems plus the to-do list, registered in one line.
    static func server(folder: String = temporaryFolder()) throws -> TestServer {
        try TestServer(folder: folder) { configuration in
            configuration.models = SeedModels.catalog().adding(Catalog(resources: [TodoList.items, TodoList.list]))
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

/// The tables of the built server against its declarations, at start.
@Suite struct DeclaredTablesAtStartTests {
    /// Runs the built `observable-server` with `arguments` until it exits
    /// (killed after 60 seconds); its exit status and what it printed.
    static func run(_ arguments: [String], in folder: String) throws -> (status: Int32, output: String) {
        let logPath = folder + "/run-\(UUID().uuidString).log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        defer { try? log.close() }
        let process = Process()
        process.executableURL = ServerProcess.executable
        process.arguments = arguments
        process.standardOutput = log
        process.standardError = log
        try process.run()
        do {
            try waitUntil(timeout: 60) { !process.isRunning }
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw error
        }
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOfFile: logPath, encoding: .utf8))
    }

    /// A database the server made, whose truck table was then changed by
    /// hand (its `name` column renamed): the server stops before it listens,
    /// names the table, the column and what differs, exits with a status
    /// other than 0, and leaves the table as it found it.
    @Test func aServerStartedOnATableThatDiffersFromItsDeclarationStopsNamingTheDifference() throws {
        let folder = temporaryFolder()
        let database = try TestEngine.database(for: folder)
        let made = try Self.run(["migrate", "--database", database], in: folder)
        #expect(made.status == 0, "\(made.output)")
        #expect(made.output.contains("made table truck"))
        try TestEngine.execute("ALTER TABLE truck RENAME COLUMN name TO title", folder: folder)

        let started = try Self.run(["serve", "--host", "127.0.0.1", "--port", "0", "--database", database], in: folder)
        #expect(started.status != 0)
        #expect(started.output.contains("the database does not match the models' declarations"), "\(started.output)")
        #expect(started.output.contains(
            "table truck, column name (field truck.name): missing; a required field without a default cannot be added to the rows there"))
        #expect(started.output.contains("table truck, column title: NOT NULL without a default in the database"))
        #expect(!started.output.contains("listening on"))
        #expect(try TestEngine.integer("SELECT COUNT(*) FROM truck WHERE title = 'Food Truck'", folder: folder) == 1)

        // Put back, the same database is served.
        try TestEngine.execute("ALTER TABLE truck RENAME COLUMN title TO name", folder: folder)
        let server = try ServerProcess(folder: folder)
        #expect(try server.client.get("/truck").json["name"] == "Food Truck")
        #expect(server.stop() == 0)
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
