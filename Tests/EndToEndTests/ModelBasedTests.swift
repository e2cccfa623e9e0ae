import HTTPServer
import Foundation
import Testing

/// Random reads, writes and polls by several observers, checked against a
/// simple oracle: each observer receives every change to a property it read
/// (after it read it) exactly once, in seq order, and nothing else.
@Suite struct ModelBasedTests {
    struct RandomSource {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[int(items.count)] }
    }

    struct OracleChange: Equatable {
        let seq: Int64
        let path: String
        let op: String
        let old: JSONValue?
        let new: JSONValue?
        let keys: [String]
        let implied: [String]

        var json: JSONValue {
            var object = JSONObject()
            object["seq"] = .int(seq)
            object["path"] = .string(path)
            object["op"] = .string(op)
            if let old { object["old"] = old }
            if let new { object["new"] = new }
            return .object(object)
        }
    }

    /// The oracle: the log of every change and every observer's reads.
    struct Oracle {
        var seq: Int64 = 0
        var log: [OracleChange] = []
        var reads: [String: [String: Int64]] = [:]

        mutating func commit(_ changes: [(path: String, op: String, old: JSONValue?, new: JSONValue?, keys: [String], implied: [String])]) {
            for c in changes {
                seq += 1
                let change = OracleChange(seq: seq, path: c.path, op: c.op, old: c.old, new: c.new, keys: c.keys, implied: c.implied)
                for observer in reads.keys where receives(observer, change) {
                    for key in change.implied where reads[observer]![key] == nil { reads[observer]![key] = seq }
                }
                log.append(change)
            }
        }

        func receives(_ observer: String, _ change: OracleChange) -> Bool {
            change.keys.contains { key in (reads[observer]?[key]).map { $0 < change.seq } ?? false }
        }

        func expected(_ observer: String, since: Int64) -> [JSONValue] {
            log.filter { $0.seq > since && receives(observer, $0) }.map(\.json)
        }

        mutating func track(_ observer: String, _ keys: [String], at seq: Int64) {
            for key in keys where reads[observer]![key] == nil { reads[observer]![key] = seq }
        }
    }

    /// The keys a read response contains: every field but ids, collections
    /// as their membership plus their elements' fields.
    static func keys(of body: JSONValue, resource: String) -> [String] {
        guard let object = body.objectValue else { return [] }
        var keys: [String] = []
        for (name, value) in object where name != "id" {
            if let elements = value.arrayValue {
                let collection = resource + "/" + name
                keys.append(collection)
                for element in elements {
                    let elementPath = collection + "/" + (element["id"]?.stringValue ?? "")
                    keys.append(contentsOf: Self.keys(of: element, resource: elementPath))
                }
            } else {
                keys.append(resource + "/" + name)
            }
        }
        return keys
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func randomReadsWritesAndPollsMatchTheOracle(seed: UInt64) throws {
        // One client making writes as fast as it can: trusted, past the write rate.
        let server = try TestServer { $0.http.trustedAddresses = try! TrustedAddresses(parsing: "127.0.0.1") }
        let connection = try TestConnection(port: server.port)
        var random = RandomSource(state: seed)
        var oracle = Oracle()

        var truckName: JSONValue = "Food Truck"
        var userName: JSONValue = .null
        var donuts: [(id: String, json: JSONObject)] = try connection.request("GET", "/truck/donuts").json["donuts"]!.arrayValue!
            .map { ($0["id"]!.stringValue!, $0.objectValue!) }
        var orders: [(id: String, json: JSONValue)] = []

        var observers: [String] = []
        var cursors: [String: Int64] = [:]
        for _ in 0..<5 {
            let id = try #require(try connection.request("POST", "/observers").json["id"]?.stringValue)
            observers.append(id)
            oracle.reads[id] = [:]
            cursors[id] = 0
        }
        let names: [JSONValue] = ["Food Truck", "Donut Express", "Night Owl"]
        let texts = ["plain", "brioche", "Glazed", "Maple", "Cruller"]
        var delivered = 0

        for step in 0..<3000 {
            let observer = random.pick(observers)
            switch random.int(10) {
            case 0, 1, 2:  // a read through an observer
                var path: String
                var resource: String
                switch random.int(6) {
                case 0:
                    let fields = ["name", "donuts", "orders", "orderCount"].filter { _ in random.int(2) == 0 }
                    path = "/truck" + (fields.isEmpty ? "" : "?fields=" + fields.joined(separator: ","))
                    resource = "/truck"
                case 1: path = "/truck/donuts"; resource = "/truck"
                case 2: path = "/truck/orders"; resource = "/truck"
                case 3: path = "/truck/orderCount"; resource = "/truck"
                case 4: path = "/account"; resource = "/account"
                default:
                    guard !donuts.isEmpty else { continue }
                    let id = random.pick(donuts).id
                    let field = random.pick(["name", "dough", "glaze", "topping"])
                    path = "/truck/donuts/\(id)" + (random.int(2) == 0 ? "?fields=\(field)" : "")
                    resource = "/truck/donuts/\(id)"
                }
                let response = try connection.request("GET", path, headers: ["Observer": observer])
                #expect(response.status == 200, "step \(step): GET \(path)")
                #expect(response.cursor == oracle.seq, "step \(step)")
                oracle.track(observer, Self.keys(of: response.json, resource: resource), at: response.cursor ?? -1)
            case 3, 4:  // a poll, checked against the oracle
                let since = cursors[observer]!
                let response = try connection.request("GET", "/observers/\(observer)/changes?since=\(since)&timeout=0&limit=1000")
                let expected = oracle.expected(observer, since: since)
                #expect(response.json.changeList == expected, "step \(step): observer \(observer) since \(since)")
                #expect(response.json["cursor"] == .int(oracle.seq), "step \(step)")
                delivered += expected.count
                cursors[observer] = oracle.seq
            case 5:
                let name = random.pick(names)
                _ = try connection.request("PATCH", "/truck", json: ["name": name])
                if name != truckName { oracle.commit([("/truck/name", "set", truckName, name, ["/truck/name"], [])]) }
                truckName = name
            case 6:
                guard !donuts.isEmpty else { continue }
                let index = random.int(donuts.count)
                let (id, old) = donuts[index]
                var patch = JSONObject()
                for field in ["name", "dough", "glaze", "topping"] where random.int(3) == 0 {
                    patch[field] = field == "glaze" || field == "topping" ? (random.int(3) == 0 ? .null : .string(random.pick(texts))) : .string(random.pick(texts))
                }
                let response = try connection.request("PATCH", "/truck/donuts/\(id)", json: .object(patch))
                #expect(response.status == 200, "step \(step)")
                var new = old
                var changes: [(path: String, op: String, old: JSONValue?, new: JSONValue?, keys: [String], implied: [String])] = []
                for field in ["name", "dough", "glaze", "topping"] {
                    guard let value = patch[field], value != old[field] else { continue }
                    let path = "/truck/donuts/\(id)/\(field)"
                    changes.append((path, "set", old[field], value, [path], []))
                    new[field] = value
                }
                oracle.commit(changes)
                donuts[index].json = new
            case 7:
                if random.int(2) == 0 || donuts.count < 2 {
                    let response = try connection.request("POST", "/truck/donuts", json: ["name": .string(random.pick(texts))])
                    let id = try #require(response.json["id"]?.stringValue)
                    let element = "/truck/donuts/\(id)"
                    oracle.commit([("/truck/donuts", "insert", nil, response.json, ["/truck/donuts"],
                                    ["name", "dough", "glaze", "topping"].map { element + "/" + $0 })])
                    donuts.append((id, response.json.objectValue!))
                } else {
                    let (id, json) = donuts.remove(at: random.int(donuts.count))
                    #expect(try connection.request("DELETE", "/truck/donuts/\(id)").status == 204)
                    let element = "/truck/donuts/\(id)"
                    oracle.commit([("/truck/donuts", "remove", .object(json), nil,
                                    ["/truck/donuts"] + ["name", "dough", "glaze", "topping"].map { element + "/" + $0 }, [])])
                }
            case 8:
                if random.int(3) > 0 || orders.isEmpty {
                    guard !donuts.isEmpty else { continue }
                    let quantity = Int64(1 + random.int(5))
                    let response = try connection.request("POST", "/truck/orders", json: ["donutId": .string(random.pick(donuts).id), "quantity": .int(quantity)])
                    let id = try #require(response.json["id"]?.stringValue)
                    let element = "/truck/orders/\(id)"
                    let count = Int64(orders.count)
                    oracle.commit([
                        ("/truck/orders", "insert", nil, response.json, ["/truck/orders"], [element + "/donutId", element + "/quantity"]),
                        ("/truck/orderCount", "set", .int(count), .int(count + 1), ["/truck/orderCount"], []),
                    ])
                    orders.append((id, response.json))
                } else {
                    let (id, json) = orders.remove(at: random.int(orders.count))
                    #expect(try connection.request("DELETE", "/truck/orders/\(id)").status == 204)
                    let element = "/truck/orders/\(id)"
                    let count = Int64(orders.count)
                    oracle.commit([
                        ("/truck/orders", "remove", json, nil, ["/truck/orders", element + "/donutId", element + "/quantity"], []),
                        ("/truck/orderCount", "set", .int(count + 1), .int(count), ["/truck/orderCount"], []),
                    ])
                }
            default:
                let new: JSONValue = random.int(3) == 0 ? .null : random.pick(["ada", "grace", "alan"])
                if new == .null {
                    _ = try connection.request("POST", "/account/logout")
                } else {
                    _ = try connection.request("POST", "/account/login", json: ["userName": new])
                }
                if new != userName { oracle.commit([("/account/userName", "set", userName, new, ["/account/userName"], [])]) }
                userName = new
            }
        }
        // A last poll for everyone, then every observer's reads match the oracle's.
        for observer in observers {
            let since = cursors[observer]!
            let response = try connection.request("GET", "/observers/\(observer)/changes?since=\(since)&timeout=0&limit=1000")
            #expect(response.json.changeList == oracle.expected(observer, since: since))
            let reads = try connection.request("GET", "/observers/\(observer)").json["reads"]?.arrayValue?.compactMap(\.stringValue)
            #expect(reads == oracle.reads[observer]!.keys.sorted())
        }
        #expect(delivered > 100, "the run delivered too few changes to mean much")
    }
}
