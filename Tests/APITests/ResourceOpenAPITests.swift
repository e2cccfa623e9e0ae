@testable import API
import Foundation
@testable import ModelStore
import Testing

/// A model's part of the OpenAPI document, rendered from its declaration
/// alone: a shelf's boxes, each holding items.
@Suite struct ResourceOpenAPITests {
    static let boxes = Resource.collection("boxes", element: "box", at: "/shelf/boxes", allowing: [.list, .create, .get, .patch, .delete]) {
        Field.text("name")
        Field.integer("weightKg", range: 1...50)
        Field.text("note", nullable: true, limits: TextLimits(maxLength: 5))
        Resource.collection("items", element: "item", at: "items", allowing: [.get]) { Field.text("label") }
        Computed("isPacked", .boolean) { _, _ in .bool(false) }
    }

    @Test func aModelsPartOfTheOpenAPIDocumentNamesItsFieldsWithTheirRules() {
        let paths = Self.boxes.openAPIPaths()
        #expect(paths.contains("  /shelf/boxes:\n    get:\n"))
        #expect(paths.contains("      operationId: createBox\n"))
        #expect(paths.contains("  /shelf/boxes/{id}/items/{itemId}:\n"))
        // A text's limits in a body: characters as `maxLength`, bytes as `x-maxBytes`.
        #expect(paths.contains("                  maxLength: 5\n                  x-maxBytes: 20\n                  pattern: '[^\\x00-\\x20"))
        let schemas = Self.boxes.openAPISchemas()
        #expect(schemas.contains("    BoxSelection:\n"))
        #expect(schemas.contains("        weightKg:\n          type: integer\n          minimum: 1\n          maximum: 50\n"))
        #expect(schemas.contains("        note:\n          type: [string, \"null\"]\n"))
        #expect(schemas.contains("    required: [id, name, weightKg, note, items, isPacked]\n"))
    }

    /// The `pattern` the API reference gives for "not blank" says, code
    /// point by code point, what the rule says.
    @Test func thePatternOfNotBlankAgreesWithTheRuleOnEveryCodePointOfTheBasicPlane() throws {
        let pattern = try NSRegularExpression(pattern: Resource.visibleTextPattern)
        var disagreements: [String] = []
        for value in UInt32(0)...0xFFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = String(scalar)
            let matches = pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            if matches == TextLimits.isBlank(text) { disagreements.append("U+" + String(value, radix: 16, uppercase: true)) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
    }
}
