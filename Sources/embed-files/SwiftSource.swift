/// The generated Swift source: one `extension Embedded` with a static
/// property per group of files.
enum SwiftSource {
    struct File {
        let name: String
        let bytes: [UInt8]
        let sha256: String
    }

    static func render(openAPIDocument: File, webFiles: [File], migrations: [File]) -> String {
        var out = """
            // Generated at build time by embed-files (the EmbedFiles plugin) from
            // docs/openapi.yaml, web/ and migrations/. Not committed; do not edit.

            extension Embedded {
                /// `docs/openapi.yaml`, answered at `GET /openapi.yaml`.

            """
        out += "    public static let openAPIDocument = " + expression(openAPIDocument) + "\n\n"
        out += "    /// The files of `web/`, sorted by name: the live page.\n"
        out += list("webFiles", webFiles)
        out += "\n    /// The `NNNN_name.sql` files of `migrations/`, sorted by name.\n"
        out += list("migrations", migrations)
        out += "}\n"
        return out
    }

    static func list(_ name: String, _ files: [File]) -> String {
        var out = "    public static let \(name): [EmbeddedFile] = [\n"
        for file in files.sorted(by: { $0.name < $1.name }) {
            out += "        " + expression(file) + ",\n"
        }
        return out + "    ]\n"
    }

    /// An `EmbeddedFile(…)` expression: UTF-8 text as a multi-line string
    /// literal, anything else as an array of bytes.
    static func expression(_ file: File) -> String {
        let head = "EmbeddedFile(name: \(quoted(file.name)), sha256: \"\(file.sha256)\", "
        guard let text = String(validating: file.bytes, as: UTF8.self) else {
            let rows = stride(from: 0, to: file.bytes.count, by: 16).map { start in
                file.bytes[start..<min(start + 16, file.bytes.count)].map { "0x" + hex($0) }.joined(separator: ", ")
            }
            return head + "bytes: [\n" + rows.map { $0 + ",\n" }.joined() + "])"
        }
        // The closing delimiter stands at the start of its line, so no
        // indentation is stripped, and the line break before it is not part
        // of the string: the text is exactly the file's.
        return head + "text: \"\"\"\n" + escaped(text, keepingLineFeeds: true) + "\n\"\"\")"
    }

    /// A one-line string literal.
    static func quoted(_ text: String) -> String {
        "\"" + escaped(text, keepingLineFeeds: false) + "\""
    }

    /// `text` with every character a Swift string literal would read
    /// otherwise escaped: backslashes, quotes (so no `"""` ends a literal),
    /// and control characters, carriage returns included (the compiler would
    /// turn a CR LF line ending in a literal into LF); Unicode's line and
    /// paragraph separators too, so the source's lines are the file's.
    static func escaped(_ text: String, keepingLineFeeds: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += keepingLineFeeds ? "\n" : "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator:
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func hex(_ byte: UInt8) -> String {
        (byte < 16 ? "0" : "") + String(byte, radix: 16)
    }
}
