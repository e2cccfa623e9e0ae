import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Another client: plain HTTP requests, answers parsed with Foundation's
/// JSONSerialization (not the client's parser). `send` blocks the calling
/// thread, so a test on the main actor can write without letting the
/// client's feed apply anything meanwhile.
public enum Raw {
    public struct Answer {
        public let status: Int
        public let body: Data
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    public static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    @discardableResult
    public static func send(_ method: String, port: UInt16, _ path: String, _ body: String? = nil, headers: [String: String] = [:]) -> Answer {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.httpBody = body.map { Data($0.utf8) }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let semaphore = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var answer = Answer(status: 0, body: Data())
        session.dataTask(with: request) { data, response, _ in
            answer = Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data ?? Data())
            semaphore.signal()
        }.resume()
        semaphore.wait()
        return answer
    }

    public static func isHealthy(port: UInt16) -> Bool {
        send("GET", port: port, "/healthz").status == 200
    }
}
