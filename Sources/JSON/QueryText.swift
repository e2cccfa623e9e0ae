/// How a query of the server's grammar (`field=op.value`, docs/API.md
/// "Queries") writes its values: shared by the server, which names a
/// query read in the changes its reader hears, and the Swift client, which
/// names its query reads the same way.
public enum QueryText {
    /// A value as a condition writes it: a text as it is, anything else as
    /// JSON writes it (`100.0` is `100`).
    public static func plain(_ value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        return JSONWriter.string(value)
    }

    /// An item of `in.(…)`, double-quoted (with `\"` and `\\`) where it holds
    /// what would split it or is blank at an end.
    public static func listItem(_ value: JSONValue) -> String {
        let text = plain(value)
        guard case .string = value, text.isEmpty || text.contains(where: { ",()\"\\".contains($0) }) || text.first == " " || text.last == " "
        else { return text }
        var quoted = "\""
        for character in text {
            if character == "\\" || character == "\"" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "\""
    }

    /// `text` with every byte but letters, digits and `-._~(),` escaped, for a URL.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "("), UInt8(ascii: ")"),
                 UInt8(ascii: ","):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }
}
