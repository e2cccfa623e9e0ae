import ModelStore

/// The OpenAPI document the server answers: docs/openapi.yaml, the whole
/// document, with every model's part derived again from its declaration.
/// The file holds the derived parts too, so that it is complete on its own;
/// a derived part replaces its copy in the file (or is added when the file
/// lacks it), so the declaration wins and a file that is up to date comes
/// out unchanged. `OpenAPITests` fails when the two differ.
enum APIReference {
    /// `base` with the operations, parameters and schemas of `catalog`'s
    /// models. An operation of a path the base also holds by hand (a
    /// hand-written `POST /jobs` beside the derived `GET /jobs`) joins that
    /// path; the hand-written ones are kept.
    static func document(base: String, catalog: Catalog) -> String {
        var document = YAMLDocument(base)
        for resource in catalog.resources {
            document.merge(resource.openAPIPaths(), into: ["paths"], joiningEntries: true)
            document.merge(resource.openAPIParameters(), into: ["components", "parameters"])
            document.merge(resource.openAPISchemas(), into: ["components", "schemas"])
        }
        return document.text
    }
}

/// Just enough of a YAML document's block structure to put entries into its
/// mappings: lines, and each key's place found by its indentation.
struct YAMLDocument {
    private var lines: [Substring]

    init(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    /// Puts the entries of `fragment` (a mapping indented one level deeper
    /// than the mapping at `path`) into that mapping. An entry whose key is
    /// new goes after the mapping's entries; one whose key is there replaces
    /// it, or, `joiningEntries`, puts its own entries into it the same way
    /// (an operation replaces the operation of the same method, and the
    /// path's other operations stay).
    mutating func merge(_ fragment: String, into path: [String], joiningEntries: Bool = false) {
        guard let (start, end) = range(of: path) else { return }
        let indent = 2 * path.count
        var mappingEnd = end
        for entry in Self.entries(of: fragment.split(separator: "\n"), indent: indent) {
            if let existing = (start + 1..<mappingEnd).first(where: { lines[$0] == entry.first }) {
                let entryEnd = blockEnd(after: existing, indent: indent)
                if joiningEntries {
                    var blockEnd = entryEnd
                    for child in Self.entries(of: Array(entry.dropFirst()), indent: indent + 2) {
                        blockEnd += put(child, in: existing + 1..<blockEnd, indent: indent + 2)
                    }
                    mappingEnd += blockEnd - entryEnd
                } else {
                    mappingEnd += put(entry, in: existing..<entryEnd, indent: indent)
                }
            } else {
                lines.insert(contentsOf: entry, at: mappingEnd)
                mappingEnd += entry.count
            }
        }
    }

    /// Replaces the entry of `entry`'s key in `range` (keys at `indent`
    /// spaces) with `entry`, or adds it at the end of `range`; answers how
    /// many lines that added.
    private mutating func put(_ entry: [Substring], in range: Range<Int>, indent: Int) -> Int {
        guard let existing = range.first(where: { lines[$0] == entry.first }) else {
            lines.insert(contentsOf: entry, at: range.upperBound)
            return entry.count
        }
        let end = blockEnd(after: existing, indent: indent)
        lines.replaceSubrange(existing..<end, with: entry)
        return entry.count - (end - existing)
    }

    /// `lines` cut into entries: each a key at `indent` spaces, then the
    /// lines below it.
    private static func entries(of lines: [Substring], indent: Int) -> [[Substring]] {
        var entries: [[Substring]] = []
        for line in lines {
            let leading = line.prefix { $0 == " " }.count
            if leading == indent, !line.dropFirst(leading).hasPrefix("- ") {
                entries.append([line])
            } else if !entries.isEmpty {
                entries[entries.count - 1].append(line)
            }
        }
        return entries
    }

    /// The lines of the mapping at `path`: from its key's line to the end
    /// of its block (trailing blank lines left outside).
    private func range(of path: [String]) -> (Int, Int)? {
        var start = 0, end = lines.count
        for (depth, key) in path.enumerated() {
            let line = String(repeating: " ", count: 2 * depth) + key + ":"
            guard let found = (start..<end).first(where: { lines[$0] == line }) else { return nil }
            start = found
            end = blockEnd(after: found, indent: 2 * depth)
        }
        return (start, end)
    }

    /// The line after the block that starts at `line` (a key at `indent`
    /// spaces): after its last line indented deeper, so blank lines and
    /// comments that follow it are left outside.
    private func blockEnd(after line: Int, indent: Int) -> Int {
        var end = line + 1
        var lastContent = line
        while end < lines.count {
            let text = lines[end]
            if !text.allSatisfy({ $0 == " " }) {
                let leading = text.prefix { $0 == " " }.count
                let isComment = text.dropFirst(leading).hasPrefix("#")
                if leading <= indent && !isComment { break }
                if leading > indent { lastContent = end }
            }
            end += 1
        }
        return lastContent + 1
    }
}
