import ObservableClientMacros
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

let macros: [String: MacroSpec] = [
    "RemoteModel": MacroSpec(type: RemoteModelMacro.self, conformances: ["RemoteElement", "RemoteSingleton", "Sendable"]),
    "_RemoteTracked": MacroSpec(type: RemoteTrackedMacro.self),
]

/// What `@RemoteModel` writes for a declaration, and what it refuses.
final class RemoteModelMacroTests: XCTestCase {
    func testAnElementBecomesTrackedFields() {
        assertMacroExpansion(
            """
            @RemoteModel("/posts/{id}")
            public final class Post {
                public let id: String
                public var imageURL: String
                var height: Double = 1
                var notes = 0 { didSet {} }
            }
            """,
            expandedSource: """
            public final class Post {
                public let id: String
                public var imageURL: String {
                    @storageRestrictions(initializes: _imageURL)
                    init(initialValue) {
                        _imageURL = initialValue
                    }
                    get {
                        _$noteRead(0, \\.imageURL)
                        return _imageURL
                    }
                }

                @RemoteIgnored var _imageURL: String = .remoteDefault
                var height: Double {
                    @storageRestrictions(initializes: _height)
                    init(initialValue) {
                        _height = initialValue
                    }
                    get {
                        _$noteRead(1, \\.height)
                        return _height
                    }
                }

                @RemoteIgnored var _height: Double = 1
                var notes = 0 { didSet {} }

                public let _$path: String

                public let _$registrar = ObservationRegistrar()

                public weak var _$client: ObservableClient?

                public var _$readMask: UInt16 = 0

                public var _$trackedMask: UInt16 = 3

                public var _$freshAt: Int64 = -1

                public static let _$schema = RemoteSchema<Post>([
                        .field("imageURL", \\.imageURL, \\._imageURL),
                        .field("height", \\.height, \\._height)
                    ])

                public init(_$id id: String, path: String, client: ObservableClient) {
                    self.id = id
                    self._$path = path
                    self._$client = client
                }

                public static func _$elementPath(id: String, parent: String) -> String {
                    "/posts/" + id
                }
            }

            extension Post: RemoteElement, @unchecked Sendable {
            }
            """,
            macroSpecs: macros)
    }

    func testAHeldElementsPathStartsFromItsParent() {
        assertMacroExpansion(
            """
            @RemoteModel("{parent}/cards/{id}")
            final class Card {
                let id: String
            }
            """,
            expandedSource: """
            final class Card {
                let id: String

                let _$path: String

                let _$registrar = ObservationRegistrar()

                weak var _$client: ObservableClient?

                var _$readMask: UInt16 = 0

                var _$trackedMask: UInt16 = 0

                var _$freshAt: Int64 = -1

                static let _$schema = RemoteSchema<Card>([

                    ])

                init(_$id id: String, path: String, client: ObservableClient) {
                    self.id = id
                    self._$path = path
                    self._$client = client
                }

                static func _$elementPath(id: String, parent: String) -> String {
                    parent + "/cards/" + id
                }
            }

            extension Card: RemoteElement, @unchecked Sendable {
            }
            """,
            macroSpecs: macros)
    }

    func testMistakesAreReportedWhereTheyAre() {
        for (source, expanded, message) in [
            ("@RemoteModel(\"/a\") class A {}", "class A {}", "@RemoteModel applies to a final class: mark it `final`"),
            ("@RemoteModel(\"/a\") struct A {}", "struct A {}", "@RemoteModel applies to a final class"),
            ("@RemoteModel(\"/a\") final class A { var b = 1 }", "final class A { var b = 1 \n}",
             "the field `b` needs its type written out (`var b: String`)"),
            ("@RemoteModel(\"/a/{id}\") final class A {}", "final class A {}", "an element (a path ending in {id}) declares `let id: String`"),
            ("@RemoteModel(\"a/{id}/b\") final class A {}", "final class A {}",
             "@RemoteModel's path is absolute (\"/account\"), or names an element by its id at its end (\"/truck/donuts/{id}\", \"{parent}/cards/{id}\")"),
        ] {
            assertMacroExpansion(
                source, expandedSource: expanded, diagnostics: [DiagnosticSpec(message: message, line: 1, column: 1)], macroSpecs: macros)
        }
    }
}
