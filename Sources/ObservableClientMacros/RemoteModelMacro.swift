import SwiftCompilerPlugin
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

@main
struct ObservableClientMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [RemoteModelMacro.self, RemoteTrackedMacro.self, MarkerMacro.self]
}

/// A mistake in a declaration, reported where it is.
struct DeclarationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `@RemoteModel("/truck/donuts/{id}")` on a final class: each stored `var`
/// becomes a field of the server's resource, tracked per property.
///
/// - member: the bookkeeping (`_$path`, `_$registrar`, …), the schema (one
///   entry per field, in declaration order: the order of the server's
///   representation), the initializer the client calls, and the path.
/// - memberAttribute: `@_RemoteTracked(bit)` on each field.
/// - extension: `RemoteElement` (a path with `{id}`) or `RemoteSingleton`,
///   and `@unchecked Sendable`.
public struct RemoteModelMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    /// The path template, and what it makes of the model.
    struct Template {
        let text: String
        /// `{id}` ends it: one object per element of a collection.
        var isElement: Bool { text.hasSuffix("/{id}") }

        init(_ node: AttributeSyntax) throws {
            guard case .argumentList(let arguments) = node.arguments, let first = arguments.first,
                  let literal = first.expression.as(StringLiteralExprSyntax.self),
                  literal.segments.count == 1, case .stringSegment(let segment) = literal.segments.first
            else { throw DeclarationError("@RemoteModel takes the resource's path as a string literal, as \"/truck/donuts/{id}\"") }
            text = segment.content.text
            let placeholders = text.filter { $0 == "{" }.count
            let valid = (text.hasPrefix("/") || text.hasPrefix("{parent}/"))
                && !text.hasSuffix("/")
                && placeholders == (text.hasPrefix("{parent}") ? 1 : 0) + (isElement ? 1 : 0)
            guard valid else {
                throw DeclarationError(
                    "@RemoteModel's path is absolute (\"/account\"), or names an element by its id at its end (\"/truck/donuts/{id}\", \"{parent}/cards/{id}\")")
            }
        }

        /// The expression of an element's path, from `id` and `parent`.
        var elementPath: String {
            var rest = String(text.dropLast("{id}".count))
            var parts: [String] = []
            if rest.hasPrefix("{parent}") {
                parts.append("parent")
                rest = String(rest.dropFirst("{parent}".count))
            }
            parts.append("\"" + rest + "\"")
            parts.append("id")
            return parts.joined(separator: " + ")
        }
    }

    static func classDeclaration(_ declaration: some DeclGroupSyntax) throws -> ClassDeclSyntax {
        guard let type = declaration.as(ClassDeclSyntax.self) else {
            throw DeclarationError("@RemoteModel applies to a final class")
        }
        guard type.modifiers.contains(where: { $0.name.tokenKind == .keyword(.final) }) else {
            throw DeclarationError("@RemoteModel applies to a final class: mark it `final`")
        }
        guard type.genericParameterClause == nil else {
            throw DeclarationError("@RemoteModel does not apply to a generic class")
        }
        return type
    }

    static func access(_ type: ClassDeclSyntax) -> String {
        type.modifiers.contains { [.keyword(.public), .keyword(.open)].contains($0.name.tokenKind) } ? "public " : ""
    }

    public static func expansion(of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
                                 conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext) throws -> [DeclSyntax]
    {
        let type = try classDeclaration(declaration)
        let template = try Template(node)
        let fields = try Field.all(in: type)
        let access = access(type)
        let name = type.name.text
        guard fields.count <= 16 else { throw DeclarationError("@RemoteModel tracks at most 16 fields") }
        if template.isElement {
            let hasID = type.memberBlock.members.contains { member in
                guard let variable = member.decl.as(VariableDeclSyntax.self) else { return false }
                return variable.bindings.contains { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text == "id" }
            }
            guard hasID else { throw DeclarationError("an element (a path ending in {id}) declares `let id: String`") }
        }
        let entries = fields.map { field in
            "        .field(\"\(field.name)\", \\.\(field.name), \\._\(field.name)\(field.paged ? ", paged: true" : ""))"
        }
        var members: [DeclSyntax] = [
            "\(raw: access)let _$path: String",
            "\(raw: access)let _$registrar = ObservationRegistrar()",
            "\(raw: access)weak var _$client: ObservableClient?",
            "\(raw: access)var _$readMask: UInt16 = 0",
            "\(raw: access)var _$trackedMask: UInt16 = \(raw: (1 << fields.count) - 1)",
            "\(raw: access)var _$freshAt: Int64 = -1",
            "\(raw: access)static let _$schema = RemoteSchema<\(raw: name)>([\n\(raw: entries.joined(separator: ",\n"))\n    ])",
        ]
        if template.isElement {
            members += [
                """
                \(raw: access)init(_$id id: String, path: String, client: ObservableClient) {
                    self.id = id
                    self._$path = path
                    self._$client = client
                }
                """,
                "\(raw: access)static func _$elementPath(id: String, parent: String) -> String { \(raw: template.elementPath) }",
            ]
        } else {
            members += [
                """
                \(raw: access)init(_$client client: ObservableClient) {
                    self._$path = \(literal: template.text)
                    self._$client = client
                }
                """,
                "\(raw: access)static let _$singletonPath = \(literal: template.text)",
            ]
        }
        return members
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingAttributesFor member: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AttributeSyntax]
    {
        guard let type = declaration.as(ClassDeclSyntax.self), let variable = member.as(VariableDeclSyntax.self),
              let name = Field.candidate(variable)?.name,
              let fields = try? Field.all(in: type), let bit = fields.firstIndex(where: { $0.name == name })
        else { return [] }
        return ["@_RemoteTracked(\(raw: bit))"]
    }

    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax]
    {
        // Only for a declaration the member expansion takes (its mistakes are reported there).
        guard (try? expansion(of: node, providingMembersOf: declaration, conformingTo: protocols, in: context)) != nil,
              let template = try? Template(node)
        else { return [] }
        let names = Set(protocols.map(\.trimmedDescription))
        var conformances: [String] = []
        let model = template.isElement ? "RemoteElement" : "RemoteSingleton"
        if names.contains(model) { conformances.append(model) }
        if names.contains("Sendable") { conformances.append("@unchecked Sendable") }
        guard !conformances.isEmpty else { return [] }
        let decl: DeclSyntax = "extension \(type.trimmed): \(raw: conformances.joined(separator: ", ")) {}"
        return [decl.cast(ExtensionDeclSyntax.self)]
    }
}

/// A stored property the model tracks.
struct Field {
    let name: String
    /// Marked `@Paged`: a collection read a page at a time, newest first.
    let paged: Bool

    /// The property, when it is one the model tracks: a `var` of the
    /// instance, stored (no accessors), not `@RemoteIgnored`.
    static func candidate(_ variable: VariableDeclSyntax) -> (name: String, binding: PatternBindingSyntax)? {
        guard variable.bindingSpecifier.tokenKind == .keyword(.var),
              !variable.modifiers.contains(where: { [.keyword(.static), .keyword(.class), .keyword(.lazy)].contains($0.name.tokenKind) }),
              !variable.attributes.contains(where: { attribute($0, named: "RemoteIgnored") }),
              variable.bindings.count == 1, let binding = variable.bindings.first, binding.accessorBlock == nil,
              let identifier = binding.pattern.as(IdentifierPatternSyntax.self)
        else { return nil }
        return (identifier.identifier.text, binding)
    }

    static func attribute(_ element: AttributeListSyntax.Element, named name: String) -> Bool {
        guard case .attribute(let attribute) = element else { return false }
        return attribute.attributeName.trimmedDescription == name
    }

    static func all(in type: ClassDeclSyntax) throws -> [Field] {
        try type.memberBlock.members.compactMap { member -> Field? in
            guard let variable = member.decl.as(VariableDeclSyntax.self), let (name, binding) = candidate(variable) else { return nil }
            guard binding.typeAnnotation != nil else {
                throw DeclarationError("the field `\(name)` needs its type written out (`var \(name): String`)")
            }
            return Field(name: name, paged: variable.attributes.contains { attribute($0, named: "Paged") })
        }
    }
}

/// `@_RemoteTracked(bit)` on a field: a getter that notes the read (for
/// Observation and for narrowing), and the storage `_name` beside it.
public struct RemoteTrackedMacro: AccessorMacro, PeerMacro {
    static func field(_ declaration: some DeclSyntaxProtocol) -> (name: String, binding: PatternBindingSyntax)? {
        declaration.as(VariableDeclSyntax.self).flatMap(Field.candidate)
    }

    public static func expansion(of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [AccessorDeclSyntax]
    {
        guard let (name, _) = field(declaration), case .argumentList(let arguments) = node.arguments,
              let bit = arguments.first?.expression.trimmedDescription
        else { return [] }
        return [
            """
            @storageRestrictions(initializes: _\(raw: name))
            init(initialValue) {
                _\(raw: name) = initialValue
            }
            """,
            """
            get {
                _$noteRead(\(raw: bit), \\.\(raw: name))
                return _\(raw: name)
            }
            """,
        ]
    }

    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax]
    {
        guard let (name, binding) = field(declaration), let type = binding.typeAnnotation?.type.trimmed else { return [] }
        let initial = binding.initializer?.value.trimmedDescription ?? ".remoteDefault"
        return ["@RemoteIgnored var _\(raw: name): \(type) = \(raw: initial)"]
    }
}

/// `@RemoteIgnored` and `@Paged`: markers `@RemoteModel` reads; they add nothing.
public struct MarkerMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax]
    {
        []
    }
}
