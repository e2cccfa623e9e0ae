/// RFC 9457 problem details, the body of every error answer.
public enum Problem {
    /// An `application/problem+json` response.
    public static func response(_ status: Int, _ title: String, _ detail: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        var body: [UInt8] = Array(#"{"type":"about:blank","title":"#.utf8)
        appendString(title, to: &body)
        body.append(contentsOf: #","status":"#.utf8)
        body.append(contentsOf: String(status).utf8)
        body.append(contentsOf: #","detail":"#.utf8)
        appendString(detail, to: &body)
        body.append(UInt8(ascii: "}"))
        var response = HTTPResponse(status: status, headers: headers, body: body)
        response.setHeader("Content-Type", "application/problem+json")
        return response
    }

    private static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.append(contentsOf: "\\\"".utf8)
            case "\\": out.append(contentsOf: "\\\\".utf8)
            case "\n": out.append(contentsOf: "\\n".utf8)
            case _ where scalar.value < 0x20:
                out.append(contentsOf: "\\u00".utf8)
                let hex = Array("0123456789abcdef".utf8)
                out.append(hex[Int(scalar.value >> 4)])
                out.append(hex[Int(scalar.value & 0xF)])
            default: out.append(contentsOf: String(scalar).utf8)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
