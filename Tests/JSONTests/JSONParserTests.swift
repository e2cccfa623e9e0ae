import JSON
import Testing

@Suite struct JSONParserTests {
    @Test func parsesEveryKindOfValueAndKeepsKeyOrder() throws {
        let value = try JSONParser.parse(#" {"b": [1, -2.5, 3e2, true, false, null], "a": "x\u00e9\n\ud83c\udf69"} "#)
        #expect(value.objectValue?.keys == ["b", "a"])
        #expect(value["b"] == [1, -2.5, 300.0, true, false, nil])
        #expect(value["a"] == "xé\n🍩")
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "-", "tru", "nul", "\"abc", "{\"a\":1}x",
        "\"\\x\"", "\"\\ud800\"", "\"\u{01}\"", "{\"a\":1,\"a\":2}", "NaN", "[1e999]",
    ])
    func rejectsMalformedJSON(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xE2, 0x82]] {
            #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
        }
    }

    @Test func boundsNestingDepth() throws {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try JSONParser.parse(fine).arrayValue != nil)
    }

    @Test func largeIntegersBecomeDoublesAndSmallOnesStayExact() throws {
        #expect(try JSONParser.parse("9223372036854775807") == .int(.max))
        #expect(try JSONParser.parse("99999999999999999999") == .double(1e20))
    }

    @Test func writerRoundTripsAndEscapes() throws {
        let value: JSONValue = ["s": "q\"\\\n\t\u{01}é", "n": nil, "a": [1, 2.5, true]]
        let text = JSONWriter.string(value)
        #expect(text == #"{"s":"q\"\\\n\t\u0001é","n":null,"a":[1,2.5,true]}"#)
        #expect(try JSONParser.parse(text) == value)
    }
}
