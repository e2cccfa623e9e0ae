import HTTPServer
import Testing

@Suite struct HTTPResponseTests {
    @Test func headerNamesCompareIgnoringASCIICaseOnly() {
        var response = HTTPResponse(status: 200)
        response.setHeader("Content-Type", "text/plain")
        response.setHeader("content-TYPE", "application/json")
        #expect(response.headers.count == 1)
        #expect(response.header("CONTENT-TYPE") == "application/json")
        // Only letters fold: these differ in bit 0x20 but are not the same name.
        response.setHeader("X-A@", "1")
        response.setHeader("X-A`", "2")
        response.setHeader("X-A-", "3")
        response.setHeader("X-A\r", "4")
        #expect(response.headers.count == 5)
        #expect(response.header("x-a@") == "1")
        #expect(response.header("Content-Typ") == nil)
    }

    @Test func aRequestHeaderIsFoundInAnyCaseAndARepeatedOneByItsLastValue() {
        let request = HTTPRequest(method: "GET", path: "/", headerFields: [("Accept", "a"), ("X-Token", "1"), ("x-token", "2")])
        #expect(request.header("accept") == "a")
        #expect(request.header("X-TOKEN") == "2")
        #expect(request.header("X-Tokens") == nil)
    }
}
