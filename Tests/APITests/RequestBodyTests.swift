@testable import API
import HTTPServer
import Testing

/// A JSON object body read field by field: unknown fields and wrong types
/// are the client's fault (`400`).
@Suite struct RequestBodyTests {
    static let allowed = ["name", "count", "ratio", "on", "note"]

    static func body(_ text: String, emptyAllowed: Bool = false) throws -> RequestBody {
        try RequestBody(HTTPRequest(method: "POST", path: "/", body: Array(text.utf8)), allowed: allowed, emptyAllowed: emptyAllowed)
    }

    /// The status of the `APIError` `work` throws; nil when it throws none.
    static func refusal<T>(_ work: () throws -> T) -> Int? {
        do {
            _ = try work()
            return nil
        } catch let error as APIError {
            return error.status
        } catch {
            Issue.record("not an APIError: \(error)")
            return -1
        }
    }

    @Test func aFieldTheEndpointDoesNotKnowIsRefused() throws {
        #expect(Self.refusal { try Self.body(#"{"name": "a", "colour": "red"}"#) } == 400)
        #expect(Self.refusal { try Self.body(#"{"Name": "a"}"#) } == 400)
        #expect(try Self.body(#"{"name": "a", "count": 1}"#).has("count"))
    }

    @Test func aBodyThatIsNotOneJSONObjectIsRefused() throws {
        for text in ["", "[]", "1", "null", #""name""#, "{", #"{"name": "a"} {}"#] {
            #expect(Self.refusal { try Self.body(text) } == 400, "\(text)")
        }
        // Empty counts as {} where the endpoint allows it.
        #expect(try !Self.body("", emptyAllowed: true).has("name"))
    }

    @Test func aFieldOfTheWrongTypeIsRefused() throws {
        let body = try Self.body(#"{"name": 5, "count": "2", "ratio": "0.5", "on": 1, "note": 3}"#)
        #expect(Self.refusal { try body.string("name") } == 400)
        #expect(Self.refusal { try body.integer("count") } == 400)
        #expect(Self.refusal { try body.number("ratio") } == 400)
        #expect(Self.refusal { try body.bool("on") } == 400)
        #expect(Self.refusal { try body.nullableString("note") } == 400)
        let nulls = try Self.body(#"{"name": null, "count": null, "on": null}"#)
        #expect(Self.refusal { try nulls.string("name") } == 400)
        #expect(Self.refusal { try nulls.integer("count") } == 400)
        #expect(Self.refusal { try nulls.bool("on") } == 400)
    }

    @Test func anIntegerMayBeWrittenWithAZeroFractionButNotWithAnother() throws {
        #expect(try Self.body(#"{"count": 2.0}"#).integer("count") == 2)
        #expect(try Self.body(#"{"count": 9007199254740993}"#).integer("count") == 9_007_199_254_740_993)
        #expect(Self.refusal { try Self.body(#"{"count": 2.5}"#).integer("count") } == 400)
        #expect(Self.refusal { try Self.body(#"{"count": true}"#).integer("count") } == 400)
        // An integer no field accepts is out of range, not of the wrong type.
        #expect(Self.refusal { try Self.body(#"{"count": 1e30}"#).integer("count") } == 422)
    }

    @Test func absentFieldsAreNilAndNullIsTheirOwnAnswerForANullableString() throws {
        let body = try Self.body(#"{"note": null, "ratio": 3, "on": false, "name": "ada"}"#)
        #expect(try body.integer("count") == nil)
        #expect(try body.nullableString("note") == .some(nil))
        #expect(try Self.body("{}").nullableString("note") == nil)
        #expect(try body.number("ratio") == 3)
        #expect(try body.bool("on") == false)
        #expect(try body.string("name") == "ada")
    }
}
