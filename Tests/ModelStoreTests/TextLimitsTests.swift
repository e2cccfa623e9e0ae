import Foundation
import JSON
@testable import ModelStore
import Models
import Testing

/// A text rule counts characters (code points, as JSON Schema's `maxLength`
/// does), bytes and the code points of each character a reader sees, and
/// "not blank" ignores what a reader cannot see.
@Suite struct TextLimitsTests {
    static let name = Field.text("name")
    static let note = Field.text("note", limits: TextLimits(maxLength: 10, maxBytes: 12, allowsBlank: true))

    /// The detail of the `422` that `text` gets as `field`, or nil when it passes.
    static func refusal(_ text: String, _ field: Field = name) throws -> String? {
        do {
            _ = try ValidatedBody(JSONObject([field.name: .string(text)]), fields: [field], requireAll: true)
            return nil
        } catch let error as ModelError where error.kind == .unprocessable {
            return error.detail
        }
    }

    /// "a" and then `count` combining acute accents: one character.
    static func combining(_ count: Int) -> String {
        "a" + String(repeating: "\u{301}", count: count)
    }

    @Test func theByteLimitIsFourBytesACharacterUnlessDeclared() {
        #expect(TextLimits.standard.maxBytes == 800)
        #expect(TextLimits(maxLength: 2048, allowsBlank: true).maxBytes == 8192)
        #expect(TextLimits(maxLength: 10, maxBytes: 12).maxBytes == 12)
    }

    @Test func textOverTheByteLimitIsRefusedWithinTheCharacterLimit() throws {
        // A flag is two code points: 100 flags are 200 characters, 101 are 202.
        let flags = String(repeating: "🇯🇵", count: 101)
        #expect(flags.unicodeScalars.count == 202 && flags.utf8.count == 808)
        #expect(try Self.refusal(flags) == "name must be at most 200 characters")
        #expect(try Self.refusal(String(repeating: "🇯🇵", count: 100)) == nil)
        // Any 200 code points fit, whatever their width.
        #expect(try Self.refusal(String(repeating: "🍩", count: 200)) == nil)
        #expect(try Self.refusal(String(repeating: "\u{10FFFD}", count: 200)) == nil)
        // A declared byte limit is the field's own.
        #expect(try Self.refusal("ééééé", Self.note) == nil)
        #expect(try Self.refusal("éééééé1", Self.note) == "note must be at most 12 bytes in UTF-8")
    }

    /// The character limit's refusal is the one it always was, even when the
    /// text is over the byte limit too.
    @Test func textOverTheCharacterLimitKeepsItsMessage() throws {
        #expect(try Self.refusal(String(repeating: "a", count: 201)) == "name must be at most 200 characters")
        #expect(try Self.refusal(String(repeating: "🍩", count: 201)) == "name must be at most 200 characters")
        #expect(try Self.refusal(String(repeating: "a", count: 1_000_000)) == "name must be at most 200 characters")
        #expect(try Self.refusal("") == "name must not be empty")
        #expect(try Self.refusal(" \t\n") == "name must not be empty")
    }

    @Test func aCharacterOfMoreThanSixteenCodePointsIsRefused() throws {
        #expect(try Self.refusal(Self.combining(15)) == nil)
        #expect(try Self.refusal("Zalgo " + Self.combining(16))
            == "name must not combine more than 16 code points into one character")
        #expect(try Self.refusal("a" + String(repeating: "\u{FE0F}", count: 16))
            == "name must not combine more than 16 code points into one character")
        // A megabyte in one character a reader sees: 500,001 code points.
        let megabyte = Self.combining(500_000)
        #expect(megabyte.count == 1 && megabyte.utf8.count == 1_000_001)
        #expect(try Self.refusal(megabyte) == "name must be at most 200 characters")
        // Within 200 code points, 16 marks on one letter are one too many.
        #expect(try Self.refusal(String(repeating: "a", count: 183) + Self.combining(16)) == "name must not combine more than 16 code points into one character")
        // The byte limit of a blank-allowing field holds as well.
        #expect(try Self.refusal(Self.combining(6), Self.note) == "note must be at most 12 bytes in UTF-8")
    }

    @Test func realTextPasses() throws {
        let texts = [
            "Glazed", "Crème brûlée", "e\u{323}\u{302}",  // Vietnamese, decomposed
            "👨‍👩‍👧‍👦", "👩🏻‍❤️‍💋‍👨🏼", "🫱🏻‍🫲🏿", "👨🏻‍🦯‍➡️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🇯🇵🇰🇷🇮🇳",  // ZWJ sequences, flags
            "한국어 도넛", "\u{1112}\u{1161}\u{11AB}\u{1100}\u{1173}\u{11AF}",  // Hangul, composed and not
            "नमस्ते क्षत्रिय स्त्री", "ক্ষ্ম", "ស្ត្រី", "བསྒྲུབས", "กำลังดูแล",  // Indic, Khmer, Tibetan, Thai
            "甜甜圈", "ドーナツ", "می‌خواهم", "a\u{200B}b",  // CJK, a ZWNJ and a ZWSP inside words
        ]
        for text in texts {
            #expect(try Self.refusal(text) == nil, "\(text.debugDescription)")
        }
    }

    @Test func invisibleCharactersAreBlank() throws {
        let blanks = [
            "\u{200B}", "\u{FEFF}", "\u{00AD}", "\u{2060}", "\u{200C}\u{200D}", " \u{200B}\t\u{FEFF} ", "\u{202E}", "\u{3164}",
            "\u{115F}\u{1160}", "\u{FE0F}", "\u{034F}", "\u{E0020}\u{E007F}", "\u{1D173}", "\u{0}", "\u{7F}", "\u{85}", "\u{3000}",
            " \u{301}",  // a space with a combining mark was blank before, and stays so
        ]
        for blank in blanks {
            #expect(try Self.refusal(blank) == "name must not be empty", "\(blank.debugDescription)")
            #expect(try Self.refusal(blank, Self.note) == nil, "\(blank.debugDescription) where blank is allowed")
        }
        #expect(try Self.refusal("\u{200B}x\u{200B}") == nil)
        #expect(try Self.refusal("\u{301}") == nil)
    }

    /// Every text a client sets, in every seed model and action, is held to
    /// a byte limit; `donutId` is held to the menu instead (an order for
    /// anything but a donut's id is refused and nothing is stored).
    @Test func everyTextAClientSetsIsBounded() throws {
        let catalog = SeedModels.catalog()
        var resources = catalog.resources
        var inputs: [(String, [Field])] = []
        while let resource = resources.popLast() {
            resources += resource.nested
            inputs.append(("create \(resource.name)", resource.creatableFields))
            inputs.append(("patch \(resource.name)", resource.patchableFields))
        }
        inputs += catalog.actions.map { ("action \($0.pattern)", $0.input) }
        var checked: Set<String> = []
        for (operation, fields) in inputs {
            for field in fields where field.kind == .text && field.name != "donutId" {
                let limits = try #require(field.limits, "\(operation): \(field.name) has no text limits")
                #expect(limits.maxBytes <= 4 * limits.maxLength, "\(operation): \(field.name)")
                #expect(try Self.refusal(Self.combining(500_000), field) != nil, "\(operation): \(field.name)")
                checked.insert(field.name)
            }
        }
        #expect(checked == ["name", "dough", "glaze", "topping", "userName", "imageURL"])
    }
}
