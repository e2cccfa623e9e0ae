import Foundation
import Testing
import TestSupport

/// The default grid's dot ids, row by row, from migration 0002.
private let seedRows: [[String]] = [
    ["6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0001", "6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0002", "6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0003"],
    ["6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0101", "6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0102"],
    ["6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0201", "6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0202",
     "6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0203", "6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0204"],
]
private let seedDots = seedRows.flatMap { $0 }

private func dot(_ id: String, tap: Bool = false, random: Bool = false) -> JSONValue {
    ["id": .string(id), "isTapAnimated": .bool(tap), "isRandomAnimated": .bool(random)]
}

/// Starts a long-poll on its own connection; read the answer with `receive()`.
private func parkPoll(_ server: TestServer, _ observer: String, since: Int64, timeout: Double) throws -> TestConnection {
    let connection = try TestConnection(port: server.port)
    try connection.send("GET", "/observers/\(observer)/changes?since=\(since)&timeout=\(timeout)")
    return connection
}

/// Every dot of a `GET /grid` answer, row by row.
private func gridDots(_ grid: JSONValue) -> [[JSONValue]] {
    (grid["rows"]?.arrayValue ?? []).map { $0.arrayValue ?? [] }
}

@Suite struct DotGridTests {
    @Test func gridHasRaggedRowsOfThreeTwoAndFourDotsAtRest() throws {
        let server = try TestServer()
        let grid = try server.client.get("/grid")
        #expect(grid.status == 200)
        #expect(grid.header("Content-Type") == "application/json")
        #expect(grid.header("ETag") != nil)
        #expect(grid.cursor == 0)
        #expect(grid.json == ["rows": .array(seedRows.map { row in .array(row.map { dot($0) }) })])
        #expect(gridDots(grid.json).map(\.count) == [3, 2, 4])
        #expect(grid.keyOrder?["rows"]?[0]?[0]?.keys == ["id", "isTapAnimated", "isRandomAnimated"])
        let cached = try server.client.get("/grid", headers: ["If-None-Match": grid.header("ETag") ?? ""])
        #expect(cached.status == 304)
    }

    @Test func aDotReadByIdAndByPositionIsTheSameDot() throws {
        let server = try TestServer()
        let client = server.client
        for (r, row) in seedRows.enumerated() {
            for (c, id) in row.enumerated() {
                let byID = try client.get("/grid/dots/\(id)")
                let byPosition = try client.get("/grid/rows/\(r)/dots/\(c)")
                #expect(byID.status == 200)
                #expect(byPosition.status == 200)
                #expect(byID.json == dot(id))
                #expect(byPosition.json == byID.json)
                #expect(byPosition.header("ETag") == byID.header("ETag"))
            }
        }
        let row = try client.get("/grid/rows/1")
        #expect(row.json == ["row": 1, "dots": [dot(seedRows[1][0]), dot(seedRows[1][1])]])
    }

    @Test func sparseFieldsetsWorkOnDotReads() throws {
        let server = try TestServer()
        let client = server.client
        let id = seedRows[0][1]
        let sparse = try client.get("/grid/dots/\(id)?fields=isRandomAnimated")
        #expect(sparse.json == ["id": .string(id), "isRandomAnimated": false])
        #expect(try client.get("/grid/rows/0/dots/1?fields=isTapAnimated").json == ["id": .string(id), "isTapAnimated": false])
        #expect(gridDots(try client.get("/grid?fields=isTapAnimated").json).first?.first == ["id": .string(seedRows[0][0]), "isTapAnimated": false])
        let bad = try client.get("/grid/dots/\(id)?fields=isRandomAnimated,colour")
        #expect(bad.status == 400)
        #expect(bad.header("Content-Type") == "application/problem+json")
        #expect(try client.get("/grid/rows/0/dots/0?fields=size").status == 400)
    }

    @Test func positionsOutOfRangeNegativeOrNotIntegersAreNotFound() throws {
        let server = try TestServer()
        let client = server.client
        let paths = [
            "/grid/rows/0/dots/3", "/grid/rows/1/dots/2", "/grid/rows/2/dots/4", "/grid/rows/3/dots/0",
            "/grid/rows/-1/dots/0", "/grid/rows/0/dots/-1", "/grid/rows/%2D1/dots/0", "/grid/rows/+1/dots/0",
            "/grid/rows/01/dots/0", "/grid/rows/0/dots/00", "/grid/rows/1.0/dots/0", "/grid/rows/0/dots/1e0",
            "/grid/rows/x/dots/0", "/grid/rows/0/dots/first", "/grid/rows/99999999999999999999999/dots/0",
            "/grid/rows/0/dots/9223372036854775807", "/grid/rows/3", "/grid/rows/-1", "/grid/rows/one",
            "/grid/dots/no-such-dot", "/grid/dots/0",
        ]
        for path in paths {
            let response = try client.get(path)
            #expect(response.status == 404, "\(path)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(path)")
            #expect(response.json["status"] == 404, "\(path)")
        }
        #expect(try client.get("/healthz").status == 200)
    }

    @Test func patchSetsFlagsAndRefusesBadInput() throws {
        let server = try TestServer()
        let client = server.client
        let id = seedRows[2][3]
        let patched = try client.patch("/grid/dots/\(id)", ["isRandomAnimated": true])
        #expect(patched.status == 200)
        #expect(patched.json == dot(id, random: true))
        let both = try client.patch("/grid/dots/\(id)", ["isTapAnimated": true, "isRandomAnimated": false])
        #expect(both.json == dot(id, tap: true))
        #expect(try client.get("/grid/rows/2/dots/3").json == dot(id, tap: true))
        #expect(try client.patch("/grid/dots/\(id)", [:]).json == dot(id, tap: true))

        let before = try client.get("/grid").body
        for body: JSONValue in [["isTapAnimated": "false"], ["isTapAnimated": 0], ["isRandomAnimated": nil],
                                ["isTapAnimated": false, "colour": "red"], ["id": "other"], [true]]
        {
            let response = try client.patch("/grid/dots/\(id)", body)
            #expect(response.status == 400, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try client.request("PATCH", "/grid/dots/\(id)", body: Array(#"{"isTapAnimated": fal"#.utf8)).status == 400)
        #expect(try client.request("PATCH", "/grid/dots/\(id)", body: []).status == 400)
        #expect(try client.patch("/grid/dots/no-such-dot", ["isTapAnimated": true]).status == 404)
        #expect(try client.get("/grid").body == before)
    }

    @Test func patchHonoursIfMatch() throws {
        let server = try TestServer()
        let client = server.client
        let id = seedRows[0][0]
        let etag = try #require(try client.get("/grid/dots/\(id)").header("ETag"))
        #expect(try client.patch("/grid/dots/\(id)", ["isRandomAnimated": true], headers: ["If-Match": etag]).status == 200)
        let stale = try client.patch("/grid/dots/\(id)", ["isTapAnimated": true], headers: ["If-Match": etag])
        #expect(stale.status == 412)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect(try client.get("/grid/dots/\(id)").json == dot(id, random: true))
        let fresh = try #require(try client.get("/grid/dots/\(id)").header("ETag"))
        #expect(fresh != etag)
        #expect(try client.patch("/grid/dots/\(id)", ["isTapAnimated": true], headers: ["If-Match": fresh]).status == 200)
    }

    @Test func readingOneDotTracksOnlyThatDotsFieldsAndTheGridTracksRowsAndEveryDot() throws {
        let server = try TestServer()
        let client = server.client
        let one = try client.observer()
        _ = try client.get("/grid/dots/\(seedRows[1][0])?fields=isRandomAnimated", observer: one)
        _ = try client.get("/grid/rows/2/dots/1", observer: one)
        #expect(try client.get("/observers/\(one)").json["reads"] == [
            .string("/grid/dots/\(seedRows[1][0])/isRandomAnimated"),
            .string("/grid/dots/\(seedRows[2][1])/isRandomAnimated"),
            .string("/grid/dots/\(seedRows[2][1])/isTapAnimated"),
        ])
        let all = try client.observer()
        _ = try client.get("/grid", observer: all)
        let reads = Set(try client.get("/observers/\(all)").json["reads"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        var expected: Set<String> = ["/grid/rows"]
        for id in seedDots {
            expected.insert("/grid/dots/\(id)/isTapAnimated")
            expected.insert("/grid/dots/\(id)/isRandomAnimated")
        }
        #expect(reads == expected)
    }

    /// The seed's defect: one dot's change made its whole row redraw.
    /// Past retention, a reader of the grid is repaired with the rows as
    /// they stand (a dot appended meanwhile in its place, every field
    /// shown), besides the flags it reads.
    @Test func aRepairShowsTheGridsRowsAsTheyStand() throws {
        let server = try TestServer { $0.store.retainChanges = 2 }
        let client = server.client
        let id = try client.observer()
        #expect(try client.get("/grid?fields=isTapAnimated", observer: id).status == 200)
        let appended = try client.post("/grid/rows/1/dots", [:])
        let dot = try #require(appended.json["dot"]?["id"]?.stringValue)
        for name in ["A", "B", "C"] { _ = try client.patch("/truck", ["name": .string(name)]) }
        #expect(try client.changes(id, since: 0).status == 410)
        let repaired = try client.changes(id, since: 0, extra: "&repair=true")
        #expect(repaired.status == 200)
        let rows = try #require(repaired.json.changeList.first { $0["path"] == "/grid/rows" })
        #expect(rows["op"] == "repair")
        let ids = (rows["new"]?.arrayValue ?? []).map { ($0.arrayValue ?? []).compactMap { $0["id"]?.stringValue } }
        #expect(ids == [seedRows[0], seedRows[1] + [dot], seedRows[2]])
        #expect(rows["new"]?.arrayValue?[1].arrayValue?[2] == ["id": .string(dot), "isTapAnimated": false, "isRandomAnimated": false])
    }

    @Test func randomWakesExactlyTheObserverOfTheDotItNames() throws {
        let server = try TestServer()
        let client = server.client
        var observers: [String: String] = [:]  // dot id -> observer id
        var cursor: Int64 = 0
        for (r, row) in seedRows.enumerated() {
            for (c, id) in row.enumerated() {
                let observer = try client.observer()
                // Half read by id, half by position: both track the same key.
                let path = (r + c) % 2 == 0 ? "/grid/dots/\(id)?fields=isRandomAnimated" : "/grid/rows/\(r)/dots/\(c)?fields=isRandomAnimated"
                cursor = try #require(try client.get(path, observer: observer).cursor)
                observers[id] = observer
            }
        }
        let polls = try observers.mapValues { try parkPoll(server, $0, since: cursor, timeout: 2) }
        try server.waitUntil(parked: 9)
        #expect(try client.get("/metrics").text.contains("observable_longpolls_parked 9"))

        let start = Date()
        let random = try client.post("/grid/random")
        #expect(random.status == 200)
        let row = try #require(random.json["row"]?.intValue)
        let col = try #require(random.json["col"]?.intValue)
        #expect(random.keyOrder?.keys == ["row", "col", "dot"])
        let chosen = seedRows[Int(row)][Int(col)]
        #expect(random.json["dot"] == dot(chosen, random: true))

        let woken = try #require(polls[chosen]).receive()
        #expect(Date().timeIntervalSince(start) < 1.5, "the chosen dot's observer was woken, not timed out")
        #expect(woken.json.changeList == [[
            "seq": .int(cursor + 1), "path": .string("/grid/dots/\(chosen)/isRandomAnimated"), "op": "set", "old": false, "new": true,
        ]])
        for (id, poll) in polls where id != chosen {
            let answer = try poll.receive()
            #expect(answer.status == 200)
            #expect(answer.json == ["cursor": .int(cursor + 1), "changes": []], "observer of \(id)")
        }
    }

    @Test func randomTouchesOneDotOnlyAndReachesEveryDot() throws {
        let server = try TestServer()
        let client = server.client
        let reader = try client.observer()
        let cursor = try #require(try client.get("/grid", observer: reader).cursor)
        let first = try client.post("/grid/random")
        let firstID = try #require(first.json["dot"]?["id"]?.stringValue)
        let changes = try client.changes(reader, since: cursor).json.changeList
        #expect(changes.count == 1)
        #expect(changes.first?["path"] == .string("/grid/dots/\(firstID)/isRandomAnimated"))
        _ = try client.patch("/grid/dots/\(firstID)", ["isRandomAnimated": false])

        var chosen: [String: Int] = [:]
        for _ in 0..<200 {
            let random = try client.post("/grid/random")
            let id = try #require(random.json["dot"]?["id"]?.stringValue)
            let row = try #require(random.json["row"]?.intValue)
            let col = try #require(random.json["col"]?.intValue)
            #expect(seedRows[Int(row)][Int(col)] == id)
            chosen[id, default: 0] += 1
            let animated = gridDots(try client.get("/grid").json).flatMap { $0 }.filter { $0["isRandomAnimated"] == true }
            #expect(animated == [dot(id, random: true)])
            #expect(try client.patch("/grid/dots/\(id)", ["isRandomAnimated": false]).status == 200)
        }
        // 200 uniform draws from 9 dots miss one with probability below 1e-9.
        #expect(Set(chosen.keys) == Set(seedDots))
        #expect(try client.request("POST", "/grid/random", json: ["row": 0]).status == 400)
    }

    @Test func randomOnAnAnimatedDotChangesNothing() throws {
        let server = try TestServer()
        let client = server.client
        for id in seedDots { _ = try client.patch("/grid/dots/\(id)", ["isRandomAnimated": true]) }
        let seq = try #require(try client.get("/grid").cursor)
        let random = try client.post("/grid/random")
        #expect(random.status == 200)
        #expect(random.json["dot"]?["isRandomAnimated"] == true)
        #expect(try client.get("/grid").cursor == seq)
    }

    @Test func tapSendsTrueThenFalseInTwoTransactionsAndWakesNoNeighbour() throws {
        let server = try TestServer()
        let client = server.client
        let tapped = seedRows[2][1]
        let observer = try client.observer()
        let cursor = try #require(try client.get("/grid/dots/\(tapped)?fields=isTapAnimated", observer: observer).cursor)
        var neighbours: [TestConnection] = []
        for id in [seedRows[2][0], seedRows[2][2], seedRows[1][1]] {
            let neighbour = try client.observer()
            _ = try client.get("/grid/dots/\(id)", observer: neighbour)
            neighbours.append(try parkPoll(server, neighbour, since: cursor, timeout: 1))
        }
        try server.waitUntil(parked: 3)

        let tap = try client.post("/grid/dots/\(tapped)/tap")
        #expect(tap.status == 200)
        #expect(tap.json == dot(tapped))

        let changes = try client.changes(observer, since: cursor).json.changeList
        let path = JSONValue.string("/grid/dots/\(tapped)/isTapAnimated")
        #expect(changes == [
            ["seq": .int(cursor + 1), "path": path, "op": "set", "old": false, "new": true],
            ["seq": .int(cursor + 2), "path": path, "op": "set", "old": true, "new": false],
        ])
        // Two transactions: a limit of one is not stretched to the second.
        #expect(try client.changes(observer, since: cursor, extra: "&limit=1").json.changeList == [changes[0]])
        for neighbour in neighbours {
            #expect(try neighbour.receive().json == ["cursor": .int(cursor + 2), "changes": []])
        }
        // A tap accepts an empty JSON object too, and nothing else.
        #expect(try client.request("POST", "/grid/dots/\(tapped)/tap", json: [:]).status == 200)
        #expect(try client.request("POST", "/grid/dots/\(tapped)/tap", json: ["times": 2]).status == 400)
        #expect(try client.post("/grid/dots/no-such-dot/tap").status == 404)
        #expect(try client.changes(observer, since: cursor + 2).json.changeList.count == 2)
    }

    @Test func appendedRowsAndDotsAreHeardByAGridReader() throws {
        let server = try TestServer()
        let client = server.client
        let reader = try client.observer()
        let oneDot = try client.observer()
        let cursor = try #require(try client.get("/grid", observer: reader).cursor)
        _ = try client.get("/grid/dots/\(seedRows[0][0])", observer: oneDot)

        let created = try client.post("/grid/rows", ["dots": 2])
        #expect(created.status == 201)
        #expect(created.header("Location") == "/grid/rows/3")
        #expect(created.json["row"] == 3)
        let newDots = created.json["dots"]?.arrayValue ?? []
        let newIDs = newDots.compactMap { $0["id"]?.stringValue }
        #expect(newIDs.count == 2 && Set(newIDs).count == 2 && newIDs.allSatisfy { !seedDots.contains($0) })
        #expect(newDots == newIDs.map { dot($0) })
        #expect(try client.get("/grid/rows/3").json == created.json)
        #expect(gridDots(try client.get("/grid").json).map(\.count) == [3, 2, 4, 2])

        let appended = try client.post("/grid/rows/1/dots")
        #expect(appended.status == 200)
        let appendedID = try #require(appended.json["dot"]?["id"]?.stringValue)
        #expect(appended.json == ["row": 1, "col": 2, "dot": dot(appendedID)])
        #expect(try client.get("/grid/rows/1/dots/2").json == dot(appendedID))
        #expect(try client.get("/grid/dots/\(appendedID)").json == dot(appendedID))
        #expect(gridDots(try client.get("/grid").json).map(\.count) == [3, 3, 4, 2])

        // The reader has read the new dots by receiving them.
        _ = try client.patch("/grid/dots/\(newIDs[1])", ["isTapAnimated": true])
        _ = try client.post("/grid/dots/\(appendedID)/tap")
        let changes = try client.changes(reader, since: cursor).json.changeList
        #expect(changes.count == 5)
        #expect(changes[0] == ["seq": .int(cursor + 1), "path": "/grid/rows", "op": "insert", "new": created.json])
        #expect(changes[1] == ["seq": .int(cursor + 2), "path": "/grid/rows", "op": "insert", "new": appended.json])
        #expect(changes[2]["path"] == .string("/grid/dots/\(newIDs[1])/isTapAnimated"))
        #expect(changes.dropFirst(3).map { $0["new"] } == [true, false])
        let reads = try client.get("/observers/\(reader)").json["reads"]?.arrayValue ?? []
        #expect(reads.contains(.string("/grid/dots/\(appendedID)/isRandomAnimated")))

        // A reader of one dot hears no structural change.
        #expect(try client.changes(oneDot, since: cursor, timeout: 0.3).json.changeList.isEmpty)
    }

    @Test func appendingValidatesCountAndRow() throws {
        let server = try TestServer()
        let client = server.client
        let before = try client.get("/grid").body
        for body: JSONValue in [["dots": 0], ["dots": 101], ["dots": -1], [:]] {
            let response = try client.post("/grid/rows", body)
            #expect(response.status == 422, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        for body: JSONValue in [["dots": "2"], ["dots": 1.5], ["dots": nil], ["dots": 2, "row": 0], [2]] {
            #expect(try client.post("/grid/rows", body).status == 400, "\(body)")
        }
        #expect(try client.request("POST", "/grid/rows", body: []).status == 400)
        #expect(try client.request("POST", "/grid/rows", body: Array(#"{"dots": 99999999999999999999}"#.utf8)).status == 422)
        for row in ["3", "-1", "x", "01"] {
            #expect(try client.post("/grid/rows/\(row)/dots").status == 404, "\(row)")
        }
        #expect(try client.request("POST", "/grid/rows/0/dots", json: ["col": 3]).status == 400)
        #expect(try client.get("/grid").body == before)

        #expect(try client.post("/grid/rows", ["dots": 100]).status == 201)
        let full = try client.post("/grid/rows/3/dots")
        #expect(full.status == 422)
        #expect(try client.get("/grid/rows/3").json["dots"]?.arrayValue?.count == 100)
        #expect(try client.post("/grid/rows", ["dots": 1]).status == 201)
        #expect(try client.post("/grid/rows/4/dots").status == 200)
    }

    @Test func wrongMethodsAreRefusedWithAllow() throws {
        let server = try TestServer()
        let client = server.client
        let put = try client.request("PUT", "/grid", json: [:])
        #expect(put.status == 405)
        #expect(put.header("Allow") == "GET, HEAD")
        let delete = try client.delete("/grid/dots/\(seedDots[0])")
        #expect(delete.status == 405)
        #expect(delete.header("Allow") == "GET, PATCH, HEAD")
        #expect(try client.get("/grid/random").status == 405)
        #expect(try client.get("/grid/dots/\(seedDots[0])/tap").status == 405)
        #expect(try client.request("PATCH", "/grid/rows/0/dots/0", json: ["isTapAnimated": true]).status == 405)
    }

    @Test func gridStateSurvivesARestart() throws {
        let folder = temporaryFolder()
        var first: TestServer? = try TestServer(folder: folder)
        let client = first!.client
        let observer = try client.observer()
        _ = try client.get("/grid", observer: observer)
        _ = try client.patch("/grid/dots/\(seedRows[0][2])", ["isRandomAnimated": true])
        _ = try client.post("/grid/dots/\(seedRows[1][0])/tap")
        let row = try client.post("/grid/rows", ["dots": 3]).json
        let appended = try client.post("/grid/rows/0/dots").json
        let before = try client.get("/grid")
        first!.stop()
        first = nil

        let second = try TestServer(folder: folder)
        let again = second.client
        let after = try again.get("/grid")
        #expect(after.json == before.json)
        #expect(after.cursor == before.cursor)
        #expect(gridDots(after.json).map(\.count) == [4, 2, 4, 3])
        #expect(try again.get("/grid/rows/0/dots/2").json == dot(seedRows[0][2], random: true))
        #expect(try again.get("/grid/rows/3").json == row)
        let appendedID = try #require(appended["dot"]?["id"]?.stringValue)
        #expect(try again.get("/grid/rows/0/dots/3").json == dot(appendedID))
        // The observer still reads the grid, including the dots it was told about.
        let since = try #require(after.cursor)
        _ = try again.patch("/grid/dots/\(appendedID)", ["isRandomAnimated": true])
        _ = try again.post("/grid/rows/3/dots")
        #expect(try again.changes(observer, since: since).json.changePaths == ["/grid/dots/\(appendedID)/isRandomAnimated", "/grid/rows"])
        #expect(gridDots(try again.get("/grid").json).map(\.count) == [4, 2, 4, 4])
    }

    /// A reader of the grid hears an appended dot and an appended row, and
    /// a replay of the same range gives them again: an appended row's own
    /// read of the rows' membership does not move the reader's.
    @Test func aReplayGivesTheRowsInsertsAgain() throws {
        let server = try TestServer()
        let client = server.client
        let observer = try client.observer()
        let since = try #require(try client.get("/grid", observer: observer).cursor)
        #expect(try client.post("/grid/rows/1/dots").status == 200)
        #expect(try client.post("/grid/rows", ["dots": 2]).status == 201)
        let first = try client.changes(observer).json
        #expect(first.changeList.map { $0["op"] } == ["insert", "insert"])
        #expect(first.changePaths == ["/grid/rows", "/grid/rows"])
        for _ in 0..<2 {
            #expect(try client.changes(observer, since: since).json == first)
        }
        // So is a dot of the appended row, read through the insert.
        let row = try #require(first.changeList.last?["new"]?["dots"]?.arrayValue?.first?["id"]?.stringValue)
        _ = try client.patch("/grid/dots/\(row)", ["isTapAnimated": true])
        #expect(try client.changes(observer, since: since).json.changePaths == ["/grid/rows", "/grid/rows", "/grid/dots/\(row)/isTapAnimated"])
    }
}
