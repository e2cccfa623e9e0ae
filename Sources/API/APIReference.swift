import ModelStore

/// The OpenAPI document the server answers: docs/openapi.yaml, which holds
/// what is written by hand (the feed, the actions, the shared components),
/// with every model's part derived from its declaration merged in.
enum APIReference {
    /// `base` with the operations, parameters and schemas of `catalog`'s
    /// models. An operation of a path the base already has (a hand-written
    /// `POST /jobs` beside the derived `GET /jobs`) joins that path.
    static func document(base: String, catalog: Catalog) -> String {
        var document = YAMLDocument(base)
        for resource in catalog.resources {
            document.merge(resource.openAPIPaths(), into: ["paths"])
            document.merge(resource.openAPIParameters(), into: ["components", "parameters"])
            document.merge(resource.openAPISchemas(), into: ["components", "schemas"])
        }
        return document.text
    }
}

/// Just enough of a YAML document's block structure to add entries to its
/// mappings: lines, and each key's place found by its indentation.
struct YAMLDocument {
    private var lines: [Substring]

    init(_ text: String) {
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    /// Adds the entries of `fragment` (a mapping indented one level deeper
    /// than the mapping at `path`) to that mapping: after its entries, or
    /// inside an entry of the same key.
    mutating func merge(_ fragment: String, into path: [String]) {
        guard let (start, end) = range(of: path) else { return }
        let indent = String(repeating: " ", count: 2 * path.count)
        var insertAt = end
        var entries: [(key: Substring, lines: [Substring])] = []
        for line in fragment.split(separator: "\n") {
            if line.hasPrefix(indent), !line.dropFirst(indent.count).hasPrefix(" ") {
                entries.append((line, [line]))
            } else if !entries.isEmpty {
                entries[entries.count - 1].lines.append(line)
            }
        }
        for entry in entries {
            if let existing = (start..<insertAt).first(where: { lines[$0] == entry.key }) {
                let blockEnd = self.blockEnd(after: existing, indent: indent.count)
                lines.insert(contentsOf: entry.lines.dropFirst(), at: blockEnd)
                insertAt += entry.lines.count - 1
            } else {
                lines.insert(contentsOf: entry.lines, at: insertAt)
                insertAt += entry.lines.count
            }
        }
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
    /// spaces), before any blank lines that end it.
    private func blockEnd(after line: Int, indent: Int) -> Int {
        var end = line + 1
        var lastContent = line
        while end < lines.count {
            let text = lines[end]
            if !text.allSatisfy({ $0 == " " }) {
                let leading = text.prefix { $0 == " " }.count
                if leading <= indent && !text.dropFirst(leading).hasPrefix("#") { break }
                lastContent = end
            }
            end += 1
        }
        return lastContent + 1
    }
}
