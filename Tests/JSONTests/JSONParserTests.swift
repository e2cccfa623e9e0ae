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

    /// Strings are read and written in runs; escapes, control characters and
    /// multi-byte characters at the start, middle and end of a run.
    @Test(arguments: ["", "plain", "\"", "a\"b", "ab\\", "\\ab", "é", "aé", "éa", "a\u{1F369}b\nc", "\u{01}x", "x\u{1F}",
                      "tab\there", "quote\" and é \\ and \u{7F}"])
    func stringsRoundTrip(text: String) throws {
        let written = JSONWriter.string(["k": .string(text)])
        #expect(try JSONParser.parse(written)["k"] == .string(text))
        #expect(!written.utf8.contains { $0 < 0x20 })
    }

    /// Strings are scanned eight bytes at a time: every byte that needs an
    /// escape is escaped wherever it falls in a word, and every other byte
    /// is copied as it is, as a byte-by-byte escaper writes them.
    @Test func everyEscapeIsFoundWhereverItFallsInAWord() throws {
        func reference(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20: out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        let specials: [Character] = ["\"", "\\", "\n", "\u{00}", "\u{1F}", "\u{01}", "\t"]
        let others: [Character] = ["a", " ", "!", "#", "[", "]", "\u{7F}", "é", "\u{1F369}", "~", "@"]
        var generator = SystemRandomNumberGenerator()
        for length in 0...40 {
            for _ in 0..<30 {
                let text = String((0..<length).map { _ in
                    Int.random(in: 0..<5, using: &generator) == 0 ? specials.randomElement()! : others.randomElement()!
                })
                var out: [UInt8] = []
                JSONWriter.writeString(text, into: &out)
                #expect(String(decoding: out, as: UTF8.self) == reference(text))
                #expect(try JSONParser.parse(out) == .string(text))
            }
        }
    }

    @Test func invalidUTF8AfterAPlainPrefixIsRefused() throws {
        for bytes: [UInt8] in [[0x22, 0x61, 0x62, 0xFF, 0x22], [0x22, 0x61, 0xC3, 0x22], [0x22, 0x61, 0x5C, 0x71, 0x22], [0x22, 0x61, 0x0A, 0x22]] {
            #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
        }
        #expect(try JSONParser.parse([0x22, 0x61, 0x5C, 0x6E, 0xC3, 0xA9, 0x22]) == .string("a\né"))
    }

    @Test(arguments: [Int64.min, Int64.min + 1, -1000, -1, 0, 7, 10, 1234567890, Int64.max])
    func integersAreWrittenInDecimal(value: Int64) throws {
        #expect(JSONWriter.string(.int(value)) == String(value))
        #expect(try JSONParser.parse(JSONWriter.string(.int(value))) == .int(value))
    }

    @Test func writerRoundTripsAndEscapes() throws {
        let value: JSONValue = ["s": "q\"\\\n\t\u{01}é", "n": nil, "a": [1, 2.5, true]]
        let text = JSONWriter.string(value)
        #expect(text == #"{"s":"q\"\\\n\t\u0001é","n":null,"a":[1,2.5,true]}"#)
        #expect(try JSONParser.parse(text) == value)
    }
}

/// Objects with many keys parse in linear time with the same results as
/// small ones: keys in order, a repeated key refused where it appears.
@Suite struct WideObjectTests {
    static func object(keys: [String]) -> String {
        "{" + keys.enumerated().map { "\"\($0.element)\":\($0.offset)" }.joined(separator: ",") + "}"
    }

    @Test func aHundredThousandDistinctKeysKeepTheirOrderAndValues() throws {
        let keys = (0..<100_000).map { "k\($0)" }
        let object = try #require(try JSONParser.parse(Self.object(keys: keys)).objectValue)
        #expect(object.count == keys.count)
        #expect(object.keys == keys)
        #expect(object.entries.enumerated().allSatisfy { $0.element.value == .int(Int64($0.offset)) })
        #expect(object["k99999"] == .int(99_999))
    }

    /// Small objects search their keys and wide ones hash them: a repeat is
    /// refused the same way on both sides of that switch, at the byte after it.
    @Test(arguments: [2, 15, 16, 17, 100_000])
    func aRepeatedKeyIsRefusedAtTheRepeat(keyCount: Int) throws {
        for repeated in Set([0, (keyCount - 1) / 2, keyCount - 2]) {
            let keys = (0..<keyCount - 1).map { "k\($0)" } + ["k\(repeated)"]
            let text = Self.object(keys: keys)
            let offset = Array(text.utf8).count - ":\(keyCount - 1)}".utf8.count
            let error = #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
            #expect(error?.message == "duplicate key \"k\(repeated)\"")
            #expect(error?.offset == offset)
        }
    }

    /// Keys are compared as Swift strings are: a precomposed and a decomposed
    /// "é" are the same key, in a small object and in a wide one.
    @Test(arguments: [1, 40])
    func canonicallyEquivalentKeysAreRepeats(otherKeys: Int) {
        let keys = (0..<otherKeys).map { "k\($0)" } + ["\u{E9}", "e\u{301}"]
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Self.object(keys: keys)) }
    }

    @Test func wideObjectsNestedInArraysAndObjectsParse() throws {
        let inner = Self.object(keys: (0..<1_000).map { "k\($0)" })
        let value = try JSONParser.parse("{\"a\":[\(inner),\(inner)],\"b\":\(inner)}")
        #expect(value["a"]?.arrayValue?.count == 2)
        #expect(value["a"]?.arrayValue?.first?.objectValue?.count == 1_000)
        #expect(value["b"]?["k999"] == .int(999))
    }
}
