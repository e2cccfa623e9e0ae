import Testing

/// Paths of routes without parameters are found by a table, the others by
/// matching segments: both must answer the same way.
@Suite struct RoutingTests {
    @Test func literalAndParameterRoutesAnswerAlike() throws {
        let server = try TestServer()
        let client = server.client
        #expect(try client.get("/truck/orderCount").json == ["orderCount": 0])
        #expect(try client.get("/truck/orderCount/").json == ["orderCount": 0])
        #expect(try client.get("/truck/").status == 200)
        #expect(try client.get("/truck//orderCount").status == 404)
        #expect(try client.get("/truck/orderCount/x").status == 404)
        #expect(try client.get("/Truck").status == 404)
        let wrongMethod = try client.request("DELETE", "/truck/orderCount")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "GET, HEAD")
        // A literal route listed before a parameter route of the same shape
        // keeps the path; other values go to the parameter route.
        #expect(try client.get("/posts/staggered?columns=2").status == 200)
        #expect(try client.request("DELETE", "/posts/staggered").status == 405)
        #expect(try client.get("/posts/unknown").status == 404)
        #expect(try client.get("/grid/rows/0/dots/0").status == 200)
    }
}
