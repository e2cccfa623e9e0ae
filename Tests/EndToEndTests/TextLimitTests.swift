import Foundation
import Testing

/// Text is limited in characters (code points) and bytes, one character a
/// reader sees cannot combine a megabyte of marks, and invisible text is
/// blank: each refused with `422` problem+json, changing nothing.
@Suite struct TextLimitTests {
    /// `{"name":"…"}` with `name` as it is, in UTF-8 (no `\u` escapes), so
    /// the body is as large as the name and under `--max-body`.
    static func body(name: String) -> [UInt8] {
        let body = Array(#"{"name":""#.utf8) + Array(name.utf8) + Array(#""}"#.utf8)
        #expect(body.count < 1_048_576, "the body must reach the rule, not the body limit")
        return body
    }

    /// "a" and then `marks` combining acute accents: one character of `1 + 2 × marks` bytes.
    static func combining(_ marks: Int) -> String {
        "a" + String(repeating: "\u{301}", count: marks)
    }

    static func expectRefusal(_ response: TestResponse, _ detail: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 422, sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(response.json["status"] == 422, sourceLocation: sourceLocation)
        #expect(response.json["detail"] == .string(detail), sourceLocation: sourceLocation)
    }

    @Test func aMegabyteNameInOneCharacterIsRefusedAndTheTruckKeepsItsName() throws {
        let server = try TestServer()
        let client = server.client
        let before = try client.get("/truck")
        let name = Self.combining(500_000)
        #expect(name.count == 1 && name.utf8.count == 1_000_001)
        let answer = try client.request("PATCH", "/truck", body: Self.body(name: name))
        Self.expectRefusal(answer, "name must be at most 200 characters")
        let after = try client.get("/truck")
        #expect(after.json["name"] == "Food Truck")
        #expect(after.header("ETag") == before.header("ETag"))
    }

    @Test func aDonutNameBuiltTheSameWayIsRefusedOnCreateAndPatch() throws {
        let server = try TestServer()
        let client = server.client
        let name = Self.combining(520_000)
        #expect(name.utf8.count == 1_040_001)
        Self.expectRefusal(try client.request("POST", "/truck/donuts", body: Self.body(name: name)),
                           "name must be at most 200 characters")
        Self.expectRefusal(try client.request("PATCH", "/truck/donuts/\(Seed.glazed)", body: Self.body(name: name)),
                           "name must be at most 200 characters")
        // Short, but one character of seventeen code points.
        Self.expectRefusal(try client.request("PATCH", "/truck/donuts/\(Seed.glazed)", body: Self.body(name: Self.combining(16))),
                           "name must not combine more than 16 code points into one character")
        #expect(try client.get("/truck/donuts/\(Seed.glazed)").json["name"] == "Glazed")
        #expect(try client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 4)
    }

    @Test func invisibleNamesAreBlank() throws {
        let server = try TestServer()
        let client = server.client
        for name in ["\u{200B}", "\u{FEFF}", "\u{200B}\u{FEFF} \u{2060}"] {
            Self.expectRefusal(try client.patch("/truck", ["name": .string(name)]), "name must not be empty")
            Self.expectRefusal(try client.post("/truck/donuts", ["name": .string(name)]), "name must not be empty")
            Self.expectRefusal(try client.post("/account/login", ["userName": .string(name)]), "userName must not be empty")
        }
        #expect(try client.get("/truck").json["name"] == "Food Truck")
        #expect(try client.get("/truck/donuts").json["donuts"]?.arrayValue?.count == 4)
        #expect(try client.get("/account").json == ["userName": nil])
    }

    /// Emoji sequences, flags, Hangul and Indic clusters are stored and read
    /// back exactly.
    @Test func realTextIsTakenAndReadBackExactly() throws {
        let server = try TestServer()
        let client = server.client
        let name = "👩🏻‍❤️‍💋‍👨🏼 🏴󠁧󠁢󠁳󠁣󠁴󠁿🇯🇵 한국어 \u{1112}\u{1161}\u{11AB} नमस्ते क्षत्रिय 甜甜圈 می‌خواهم"
        let renamed = try client.request("PATCH", "/truck", body: Self.body(name: name))
        #expect(renamed.status == 200)
        #expect(try client.get("/truck").json["name"] == .string(name))
        // 200 four-byte characters: the most bytes the limit lets through.
        let donuts = String(repeating: "🍩", count: 200)
        let created = try client.request("POST", "/truck/donuts", body: Self.body(name: donuts))
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        #expect(try client.get("/truck/donuts/\(id)").json["name"] == .string(donuts))
    }
}
