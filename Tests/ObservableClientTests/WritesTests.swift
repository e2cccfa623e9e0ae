import ClientTestSupport
import Foundation
import Testing
@testable import ObservableClient

/// The account, jobs, games and posts through the client: its writes, and
/// what the feed brings back to the objects.
@Suite(.serialized) @MainActor
struct WritesTests {
    @Test func theAccountJobsGamesAndPostsFollowTheirWrites() async throws {
        let deployment = try Deployment(.sqlite, arguments: ["--min-job-interval", "10"])
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .quick)

        let account = try await client.account()
        #expect(account.userName == nil)
        let names = Invalidations { _ = account.userName }
        try await account.signIn(userName: "ada")
        try await eventually { account.userName == "ada" }
        try await account.signOut()
        try await eventually { account.userName == nil }
        #expect(names.count == 2)

        // A job clients report, and one the server advances.
        let jobs = try await client.jobs()
        let job = try await jobs.create(total: 100)
        try await eventually { jobs.jobs.contains { $0 === job } }
        try await job.report(current: 40)
        try await eventually { job.current == 40 }
        #expect(!job.isComplete && job.fractionCompleted == 0.4)
        do {
            try await job.report(current: 10)
            Issue.record("progress went back")
        } catch ObservableClientError.rejected {}
        try await job.report(current: 500)
        try await eventually { job.isComplete && job.current == 100 }
        let advanced = try await jobs.create(total: 5, step: 1, interval: .milliseconds(20))
        try await eventually("the server advances it") { advanced.isComplete && advanced.current == 5 }
        try await job.cancel()
        try await eventually { !jobs.jobs.contains { $0 === job } }
        await #expect(throws: ObservableClientError.self) { _ = try await client.job(id: job.id) }

        // A game: two cards of one content match.
        let games = try await client.games()
        let game = try await games.create(pairs: 2, seed: 7)
        try await eventually { games.games.contains { $0 === game } }
        let first = game.cards[0]
        let twin = try #require(game.cards.dropFirst().first { $0.content == first.content })
        let faceUp = Invalidations { _ = first.isFaceUp }
        try await first.choose()
        try await eventually { first.isFaceUp }
        try await twin.choose()
        try await eventually { first.isMatched && twin.isMatched }
        #expect(faceUp.count == 1 && !game.isOver)
        for card in game.cards where !card.isMatched {
            try await card.choose()
            try await eventually { card.isFaceUp }
        }
        try await eventually { game.isOver }
        try await game.delete()
        try await eventually { games.games.isEmpty }

        // A dot's flag, set with If-Match from what the dot shows.
        let grid = try await client.grid()
        let dot = try #require(grid.rows.last?.last)
        let random = Invalidations { _ = dot.isRandomAnimated }
        try await dot.setRandomAnimated(true)
        try await eventually { dot.isRandomAnimated }
        try await dot.setRandomAnimated(false)
        try await eventually { !dot.isRandomAnimated }
        #expect(random.count == 2)

        // Posts.
        let posts = try await client.posts()
        let post = try await posts.add(imageURL: "https://images.example/a.jpg", height: 120.5)
        try await eventually { posts.posts.map(\.id) == [post.id] }
        #expect(post.height == 120.5 && post.imageURL == "https://images.example/a.jpg")
        try await post.delete()
        try await eventually { posts.posts.isEmpty }
        await client.close()
    }
}
