import EmbeddedFiles

/// A file of the live page (web/, built in as `Embedded.webFiles`) with what
/// its answer needs: `index.html` is answered at `GET /`, every other file
/// at `GET /assets/{name}`.
struct PageFile: Sendable {
    let name: String
    let contentType: String
    /// A strong entity tag: the start of the SHA-256 of the bytes.
    let etag: String
    let bytes: [UInt8]

    init(_ file: EmbeddedFile) {
        name = file.name
        contentType = Self.contentType(of: file.name)
        etag = "\"" + file.sha256.prefix(32) + "\""
        bytes = file.bytes
    }

    /// `web/index.html`.
    static let index: PageFile = {
        guard let file = Embedded.webFiles.first(where: { $0.name == "index.html" }) else {
            fatalError("web/index.html was not built in")
        }
        return PageFile(file)
    }()

    /// The other files of web/, by name.
    static let assets: [String: PageFile] = Dictionary(
        uniqueKeysWithValues: Embedded.webFiles.filter { $0.name != "index.html" }.map { ($0.name, PageFile($0)) })

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml; charset=utf-8"
        case "txt": "text/plain; charset=utf-8"
        case "png": "image/png"
        case "ico": "image/x-icon"
        default: "application/octet-stream"
        }
    }
}
