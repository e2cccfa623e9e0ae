/// A file of the repository built into the binary by the `EmbedFiles`
/// plugin, so the server reads nothing but its database at run time.
public struct EmbeddedFile: Sendable {
    /// The file's name in its folder: `index.html`, `0001_init.sql`.
    public let name: String
    public let bytes: [UInt8]
    /// The SHA-256 of `bytes`, in lowercase hexadecimal.
    public let sha256: String

    public init(name: String, sha256: String, bytes: [UInt8]) {
        self.name = name
        self.sha256 = sha256
        self.bytes = bytes
    }

    /// A file that is UTF-8 text: the generated source holds it as a
    /// string literal, which compiles far faster than an array of bytes.
    public init(name: String, sha256: String, text: String) {
        self.init(name: name, sha256: sha256, bytes: Array(text.utf8))
    }

    /// The bytes as UTF-8 text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
