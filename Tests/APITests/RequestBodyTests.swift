@testable import API
import HTTPServer
import JSON
import ModelStore
import Testing

/// A request's body, checked against the fields an endpoint takes: unknown
/// fields and wrong types are the client's fault (`400`), a broken rule
/// `422`.
@Suite struct RequestBodyTests {
    static let fields = [
        Field.text("name").optional, Field.integer("count").optional, Field.number("ratio").optional,
        Field.boolean("on").optional, Field.text("note", nullable: true),
    ]

    static func body(_ text: String, emptyAllowed: Bool = false) throws -> ValidatedBody {
        try RequestBody.validated(HTTPRequest(method: "POST", path: "/", body: Array(text.utf8)), fields: fields, requireAll: false,
                                  emptyAllowed: emptyAllowed)
    }

    /// The status of the problem `work` throws; nil when it throws none.
    static func refusal<T>(_ work: () throws -> T) -> Int? {
        do {
            _ = try work()
            return nil
        } catch let error as any ProblemError {
            return error.status
        } catch {
            Issue.record("not a problem: \(error)")
            return -1
        }
    }

    @Test func aFieldTheEndpointDoesNotKnowIsRefused() throws {
        #expect(Self.refusal { try Self.body(#"{"name": "a", "colour": "red"}"#) } == 400)
        #expect(Self.refusal { try Self.body(#"{"Name": "a"}"#) } == 400)
        #expect(try Self.body(#"{"name": "a", "count": 1}"#)["count"] == .int(1))
    }

    @Test func aBodyThatIsNotOneJSONObjectIsRefused() throws {
        for text in ["", "[]", "1", "null", #""name""#, "{", #"{"name": "a"} {}"#] {
            #expect(Self.refusal { try Self.body(text) } == 400, "\(text)")
        }
        // Empty counts as {} where the endpoint allows it.
        #expect(try Self.body("", emptyAllowed: true)["name"] == nil)
    }

    @Test func aFieldOfTheWrongTypeIsRefused() throws {
        for text in [#"{"name": 5}"#, #"{"count": "2"}"#, #"{"ratio": "0.5"}"#, #"{"on": 1}"#, #"{"note": 3}"#,
                     #"{"name": null}"#, #"{"count": null}"#, #"{"on": null}"#]
        {
            #expect(Self.refusal { try Self.body(text) } == 400, "\(text)")
        }
    }

    @Test func anIntegerIsWrittenAsDigitsOnly() throws {
        #expect(try Self.body(#"{"count": 2}"#).int("count") == 2)
        #expect(try Self.body(#"{"count": -0}"#).int("count") == 0)
        #expect(try Self.body(#"{"count": 9007199254740993}"#).int("count") == 9_007_199_254_740_993)
        for spelling in ["2.0", "1e2", "10E-1", "-0.0", "2.5"] {
            #expect(Self.refusal { try Self.body(#"{"count": \#(spelling)}"#) } == 400, "\(spelling)")
        }
        #expect(Self.refusal { try Self.body(#"{"count": true}"#) } == 400)
        // An integer no field accepts is out of range, not of the wrong type.
        #expect(Self.refusal { try Self.body(#"{"count": 1e30}"#) } == 422)
    }

    @Test func absentFieldsAreNilNullIsNullAndANumberMayBeWhole() throws {
        let body = try Self.body(#"{"note": null, "ratio": 3, "on": false, "name": "ada"}"#)
        #expect(body["count"] == nil)
        #expect(body["note"] == .null)
        #expect(try Self.body("{}")["note"] == nil)
        #expect(body["ratio"] == .double(3))
        #expect(body["on"] == .bool(false))
        #expect(body.string("name") == "ada")
    }

    @Test func aBrokenRuleIsUnprocessable() throws {
        #expect(Self.refusal { try Self.body(#"{"name": " "}"#) } == 422)
        #expect(Self.refusal { try Self.body(#"{"name": "\#(String(repeating: "x", count: 201))"}"#) } == 422)
    }
}
