import Testing

/// The tests read answers with Foundation's parser, not the server's; these
/// pin down what that reading keeps, so that a comparison in another test
/// cannot pass for the wrong reason.
@Suite struct AnswerParsingTests {
    static func parse(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    @Test func booleansAreNotNumbers() throws {
        #expect(try Self.parse("[true, false, 1, 0]") == [.bool(true), .bool(false), .int(1), .int(0)])
        #expect(try Self.parse("true") != .int(1))
        #expect(try Self.parse("1").boolValue == nil)
    }

    @Test func integersAreExactAcrossInt64() throws {
        // 2^53 + 1 has no double; the extremes are where Foundation's fast path ends.
        #expect(try Self.parse("[9007199254740993, 9223372036854775807, -9223372036854775808, -1]")
            == [.int(9_007_199_254_740_993), .int(.max), .int(.min), .int(-1)])
    }

    @Test func numbersWithAFractionOrAnExponentOrBeyondInt64AreDoubles() throws {
        #expect(try Self.parse("[1.0, 2.5, 1e3, 99999999999999999999]") == [.double(1), .double(2.5), .double(1000), .double(1e20)])
        #expect(try Self.parse("1.0").intValue == nil)
        #expect(try Self.parse("1.0") != .int(1))
    }

    @Test func objectsCompareRegardlessOfTheOrderOfTheirKeys() throws {
        #expect(try Self.parse(#"{"a": 1, "b": [true, null]}"#) == Self.parse(#"{"b": [true, null], "a": 1}"#))
        #expect(try Self.parse(#"{"a": 1, "b": 2}"#) != Self.parse(#"{"a": 1, "b": 3}"#))
        #expect(try Self.parse(#"{"a": 1}"#) != Self.parse(#"{"a": 1, "b": 2}"#))
    }

    @Test func keyOrderIsReadFromTheTextAtEveryDepth() throws {
        let text = #"{"b": {"y": 1, "x": [{"q\"}": "}\\", "p": null}, 2.5e1]}, "a": true}"#
        let order = try #require(KeyOrder(Array(text.utf8)))
        #expect(order.keys == ["b", "a"])
        #expect(order["b"]?.keys == ["y", "x"])
        #expect(order["b"]?["x"]?[0]?.keys == ["q\"}", "p"])
        #expect(order["b"]?["x"]?[1] == .scalar)
        #expect(order["b"]?["x"]?[2] == nil)
        // The values it skips are the ones Foundation reads.
        #expect(try Self.parse(text)["b"]?["x"]?.arrayValue?.first?["q\"}"] == "}\\")
        for broken in [#"{"a": 1"#, #"{"a" 1}"#, #"["a",]"#, #"{"a": 1}}"#, ""] {
            #expect(KeyOrder(Array(broken.utf8)) == nil, "\(broken)")
        }
    }

    @Test func bodiesAreWrittenByFoundationAndReadBackUnchanged() throws {
        let body: JSONValue = ["text": "a/\"b\"\n\u{1}é", "count": .int(.max), "ratio": 2.5, "on": true, "none": nil,
                               "list": [[:], [], 0]]
        #expect(try JSONValue(parsing: body.bytes) == body)
        let small: JSONValue = ["b": true, "a": [1, 0.5, nil, "x"]]
        #expect(small.text == #"{"a":[1,0.5,null,"x"],"b":true}"#)
    }
}
