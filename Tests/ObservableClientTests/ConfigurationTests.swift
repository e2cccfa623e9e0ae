import ClientTestSupport
import Foundation
import Testing
@testable import ObservableClient
#if canImport(Glibc)
import Glibc
#endif

/// What a client is made with: its configuration, its base URL, and how it
/// says where it stands.
@Suite @MainActor
struct ConfigurationTests {
    /// A base URL that is not `http` or `https` with a host is refused at
    /// once with its own error, whatever is loaded, and nothing is sent
    /// (no feed starts).
    @Test(arguments: ["ftp://127.0.0.1/", "file:///tmp/truck", "http:///truck", "localhost:8080"])
    func aBaseURLThatCannotBeSentToIsRefused(url: String) async throws {
        let client = ObservableClient(baseURL: try #require(URL(string: url)))
        await #expect(throws: ObservableClientError.invalidBaseURL(url)) { _ = try await client.truck() }
        await #expect(throws: ObservableClientError.invalidBaseURL(url)) { _ = try await client.account() }
        #expect(client.connectionState == .idle)
        await client.close()
    }

    /// Every setting can be given to the initializer; those left out keep
    /// their defaults.
    @Test func theInitializerTakesEverySetting() {
        let configuration = ObservableClient.Configuration(
            transport: .longPolling, ordersPageSize: 20, observerTTL: 60, silenceTimeout: .seconds(20),
            reconnectDelay: 1...2, longPollTimeout: 10, requestTimeout: 5)
        #expect(configuration.transport == .longPolling)
        #expect(configuration.ordersPageSize == 20)
        #expect(configuration.observerTTL == 60)
        #expect(configuration.silenceTimeout == .seconds(20))
        #expect(configuration.reconnectDelay == 1...2)
        #expect(configuration.longPollTimeout == 10)
        #expect(configuration.requestTimeout == 5)
        let defaults = ObservableClient.Configuration(requestTimeout: 7)
        #expect(defaults.transport == .automatic)
        #expect(defaults.ordersPageSize == 50)
        #expect(defaults.requestTimeout == 7)
    }

    /// A load that gets no answer within `requestTimeout` (the server is
    /// frozen: connected, silent) throws `.unreachable`.
    @Test func aLoadPastTheRequestTimeoutIsUnreachable() async throws {
        let deployment = try Deployment(.sqlite)
        defer { deployment.stopAll() }
        let client = ObservableClient(baseURL: deployment.clientURL, configuration: .init(requestTimeout: 2))
        deployment.signalClientServer(SIGSTOP)
        defer { deployment.signalClientServer(SIGCONT) }
        do {
            _ = try await client.truck()
            Issue.record("a frozen server answered")
        } catch let error as ObservableClientError {
            guard case .unreachable = error else {
                Issue.record("expected .unreachable, got \(error)")
                return
            }
        }
        deployment.signalClientServer(SIGCONT)
        await client.close()
    }

    /// The connection state prints as a short phrase.
    @Test func theConnectionStatePrintsShort() {
        #expect("\(ObservableClient.ConnectionState.live(.stream))" == "live (stream)")
        #expect("\(ObservableClient.ConnectionState.live(.longPolling))" == "live (long-polling)")
        #expect("\(ObservableClient.ConnectionState.idle)" == "idle")
        #expect("\(ObservableClient.ConnectionState.reconnecting(attempt: 2, lastError: .unreachable("refused")))"
            == "reconnecting (attempt 2: unreachable: refused)")
        #expect("\(ObservableClient.ConnectionState.closed)" == "closed")
    }
}
