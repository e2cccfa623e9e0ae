import Foundation
import JSON
import ModelStore
@testable import Models
import Testing

@Suite struct PostsTests {
    @Test func columnsAreAnIntegerFromOneToTwelveAndTwoWhenAbsent() throws {
        #expect(try Posts.columns(nil) == 2)
        #expect(try Posts.columns("1") == 1)
        #expect(try Posts.columns("12") == 12)
        for refused in ["0", "13", "", "-1", "+3", "3.0", " 3", "three", "99999999999999999999"] {
            #expect(throws: ModelError.self, "\(refused)") { try Posts.columns(refused) }
        }
    }

    @Test func layoutIsRoundRobinWhenAbsentAndNamedExactly() throws {
        #expect(try Posts.layout(nil) == .roundRobin)
        #expect(try Posts.layout("roundRobin") == .roundRobin)
        #expect(try Posts.layout("balanced") == .balanced)
        for refused in ["Balanced", "round-robin", ""] {
            #expect(throws: ModelError.self, "\(refused)") { try Posts.layout(refused) }
        }
    }

    @Test func anImageURLIsHTTPOrHTTPSWithAHost() throws {
        for accepted in ["https://images.example/a.png", "http://x/y", "HTTPS://images.example"] {
            #expect(throws: Never.self, "\(accepted)") { try Posts.imageURL("imageURL", .string(accepted)) }
        }
        for refused in ["ftp://images.example/a.png", "https://", "https:///a.png", "https://images.example/a b.png",
                        "https://images.example/\u{7}", "images.example/a.png"] {
            #expect(throws: ModelError.self, "\(refused)") { try Posts.imageURL("imageURL", .string(refused)) }
        }
    }

    /// The ids of the posts in each column of `GET /posts/staggered`, read
    /// with Foundation's parser.
    static func staggered(_ store: Store, columns: Int, layout: String) throws -> [[String]] {
        let query = ["columns": String(columns), "layout": layout]
        let input = ReadInput(parameters: [:], query: { query[$0] }, selection: .all)
        let read = try #require(Posts.reads.first { $0.pattern == "/posts/staggered" })
        let body = try read.render(input, store.state).bytes
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let dealt = try #require(object["columns"] as? [[[String: Any]]])
        return dealt.map { column in column.compactMap { $0["id"] as? String } }
    }

    /// Creates posts of `heights`, in order; returns their ids.
    static func createPosts(_ store: Store, heights: [Double]) throws -> [String] {
        try heights.enumerated().map { index, height in
            let body = try ValidatedBody(JSONObject(["imageURL": .string("https://images.example/\(index).jpg"), "height": .double(height)]),
                                         fields: Posts.posts.creatableFields, requireAll: true)
            let answer = try store.write(Posts.posts.create(body))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body ?? [])) as? [String: Any])
            return try #require(object["id"] as? String)
        }
    }

    @Test func roundRobinDealsPostIIntoColumnIModuloTheCount() throws {
        let store = try seedStore()
        defer { store.close() }
        let ids = try Self.createPosts(store, heights: [100, 10, 10, 10, 10])
        #expect(try Self.staggered(store, columns: 2, layout: "roundRobin") == [[ids[0], ids[2], ids[4]], [ids[1], ids[3]]])
        #expect(try Self.staggered(store, columns: 7, layout: "roundRobin") == ids.map { [$0] } + [[], []])
    }

    @Test func balancedDealsEachPostIntoTheShortestColumnAndATieToTheLeftmost() throws {
        let store = try seedStore()
        defer { store.close() }
        let ids = try Self.createPosts(store, heights: [100, 10, 10, 10, 80])
        // 100 on the left; 10, 10, 10 on the right, still the shorter; and 80 there too, onto 30.
        #expect(try Self.staggered(store, columns: 2, layout: "balanced") == [[ids[0]], [ids[1], ids[2], ids[3], ids[4]]])
        // Three columns: a tie (0 and 0, then 10 and 10) goes to the leftmost of the tied columns.
        #expect(try Self.staggered(store, columns: 3, layout: "balanced") == [[ids[0]], [ids[1], ids[3]], [ids[2], ids[4]]])
    }
}
