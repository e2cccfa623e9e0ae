import HTTPServer
import JSON

/// RFC 9457 problem details, the body of every error answer.
enum Problem {
    /// An `application/problem+json` response.
    static func response(_ status: Int, _ title: String, _ detail: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        var body: [UInt8] = Array(#"{"type":"about:blank","title":"#.utf8)
        JSONWriter.writeString(title, into: &body)
        body.append(contentsOf: #","status":"#.utf8)
        body.append(contentsOf: String(status).utf8)
        body.append(contentsOf: #","detail":"#.utf8)
        JSONWriter.writeString(detail, into: &body)
        body.append(UInt8(ascii: "}"))
        var response = HTTPResponse(status: status, headers: headers, body: body)
        response.setHeader("Content-Type", "application/problem+json")
        return response
    }
}
