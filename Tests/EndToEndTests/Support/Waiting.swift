import Foundation
import Testing
import TestSupport

extension TestServer {
    /// Waits until exactly `count` long-polls are parked.
    func waitUntil(parked count: Int, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try TestSupport.waitUntil(timeout: timeout, sourceLocation: sourceLocation) { application.daemon.parkedCount == count }
    }
}

extension TestClient {
    /// The value of an unlabelled metric in `/metrics`, e.g. `observable_longpolls_parked`.
    func metric(_ name: String) throws -> Int64? {
        let text = try get("/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int64($0.dropFirst(name.count + 1)) }
    }

    /// Waits until the server (in this process or another) has exactly
    /// `count` long-polls parked, as its `/metrics` say.
    func waitUntil(parked count: Int, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try TestSupport.waitUntil(timeout: timeout, sourceLocation: sourceLocation) {
            try metric("observable_longpolls_parked") == Int64(count)
        }
    }
}
