import Foundation
import HTTPServer

/// Reads fuzz bytes as an HTTP request, deterministically:
///
/// ```
/// METHOD TARGET\n          first line; no space: the line is the method and the target is "/"
/// Name: value\n            headers, until an empty line or the end
/// \n
/// body                     every byte after the empty line
/// ```
///
/// `TARGET` is split at the first `?` into path and query; the path and each
/// query name and value are percent-decoded, as libmicrohttpd hands them over.
/// Texts end at a NUL byte, as C strings do. `\r` before `\n` is dropped.
/// Placeholders (`{observer}`, `{order}`, …) in the target, header values and
/// body become the ids of resources the harness created.
enum FuzzRequest {
    static func decode(_ bytes: [UInt8], placeholders: [(String, String)]) -> HTTPRequest {
        var lines: [ArraySlice<UInt8>] = []
        var body: [UInt8] = []
        var start = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0A {
                var line = bytes[start..<index]
                if line.last == 0x0D { line = line.dropLast() }
                start = index + 1
                if line.isEmpty && !lines.isEmpty {
                    body = Array(bytes[start...])
                    start = bytes.count
                    break
                }
                lines.append(line)
            }
            index += 1
        }
        if start < bytes.count { lines.append(bytes[start...]) }

        let requestLine = lines.first ?? []
        let method: String
        var target: String
        if let space = requestLine.firstIndex(of: 0x20) {
            method = text(requestLine[..<space])
            target = text(requestLine[(space + 1)...])
        } else {
            method = text(requestLine)
            target = "/"
        }
        target = substitute(target, placeholders)

        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = text(line[..<colon]).lowercased()
            let value = substitute(text(line[(colon + 1)...]).trimmingSpaces(), placeholders)
            headers[name] = value
        }

        let (rawPath, rawQuery) = splitOnce(Array(target.utf8), at: UInt8(ascii: "?"))
        var query: [String: String] = [:]
        if let rawQuery {
            for pair in rawQuery.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                let (name, value) = splitOnce(Array(pair), at: UInt8(ascii: "="))
                query[percentDecoded(name)] = value.map(percentDecoded) ?? ""
            }
        }
        neverPark(&query)
        body = substitute(body, placeholders)
        var path = percentDecoded(rawPath)
        if path.isEmpty { path = "/" }
        return HTTPRequest(method: method, path: path, query: query, headers: headers, body: body)
    }

    /// A poll with a `timeout` above zero (or none, which means 30 s) would
    /// park the connection, and the harness has no real connection to park.
    /// The server parks only for a `timeout` that `Double` reads as above
    /// zero, so exactly those become `0`; every other one is kept, and the
    /// server must refuse it.
    static func neverPark(_ query: inout [String: String]) {
        guard let timeout = query["timeout"] else {
            query["timeout"] = "0"
            return
        }
        if let seconds = Double(timeout), seconds > 0 {
            query["timeout"] = "0"
        }
    }

    static func text<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    static func splitOnce(_ bytes: [UInt8], at separator: UInt8) -> ([UInt8], [UInt8]?) {
        guard let i = bytes.firstIndex(of: separator) else { return (bytes, nil) }
        return (Array(bytes[..<i]), Array(bytes[(i + 1)...]))
    }

    /// `%XX` becomes its byte, as the daemon's unescape callback does: a `%`
    /// without two hex digits, and `%00`, stay as they are.
    static func percentDecoded(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let high = hex(bytes[i + 1]), let low = hex(bytes[i + 2]), high | low != 0 {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return text(out)
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    static func substitute(_ text: String, _ placeholders: [(String, String)]) -> String {
        guard text.contains("{") else { return text }
        var result = text
        for (name, value) in placeholders { result = result.replacingOccurrences(of: name, with: value) }
        return result
    }
}

extension FuzzRequest {
    /// Replaces placeholders in raw bytes, leaving every other byte alone.
    static func substitute(_ bytes: [UInt8], _ placeholders: [(String, String)]) -> [UInt8] {
        guard bytes.contains(UInt8(ascii: "{")) else { return bytes }
        let names = placeholders.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        outer: while i < bytes.count {
            if bytes[i] == UInt8(ascii: "{") {
                for (name, value) in names where bytes[i...].starts(with: name) {
                    out.append(contentsOf: value)
                    i += name.count
                    continue outer
                }
            }
            out.append(bytes[i])
            i += 1
        }
        return out
    }
}

extension String {
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        while slice.last == " " || slice.last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
