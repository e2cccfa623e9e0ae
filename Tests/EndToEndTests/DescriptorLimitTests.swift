import Foundation
import Testing
import TestSupport

/// Every connection is an open descriptor: the server raises its soft
/// limit to the hard one, and lowers a connection limit that cannot be
/// reached to what the descriptors allow.
@Suite struct DescriptorLimitTests {
    @Test func theSoftLimitIsRaisedAndAConnectionLimitBeyondItIsLowered() throws {
        var limit = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let hard = Int(clamping: limit.rlim_max)
        let requested = min(hard, 1 << 24) + 1_000
        let folder = temporaryFolder()
        let logPath = folder + "/server.log"
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        // Started with a soft limit of 256, as a shell's `ulimit -Sn` leaves it.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -Sn 256 && exec \"$0\" \"$@\"", ServerProcess.executable.path, "serve", "--host", "127.0.0.1",
                             "--port", "0", "--database", folder + "/observable.sqlite", "--connection-limit", String(requested)]
        process.standardError = log
        process.standardOutput = log
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let text = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        try waitUntil(timeout: 20) { text().contains("listening on") || !process.isRunning }
        #expect(text().contains("listening on"))
        let available = min(hard - 64, 1 << 24)
        #expect(text().contains("connection limit \(requested) lowered to \(available)"))
        let limits = try String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)
        let openFiles = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        // "Max open files  SOFT  HARD  files" (each a number or "unlimited").
        let fields = openFiles.split(separator: " ")
        #expect(fields.count == 6 && fields[3] == fields[4], "\(openFiles)")
    }

    /// libmicrohttpd runs one worker fewer than the cores (at least one),
    /// unless `--threads` says otherwise, and says nothing about it.
    @Test(arguments: [nil, 1, 2, 3])
    func theWorkersAreOneFewerThanTheCoresUnlessGiven(threads: Int?) throws {
        let folder = temporaryFolder()
        let server = try ServerProcess(folder: folder, arguments: threads.map { ["--threads", String($0)] } ?? [])
        let expected = threads ?? max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
        let names = {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.process.processIdentifier)/task")) ?? []).map {
                ((try? String(contentsOfFile: "/proc/\(server.process.processIdentifier)/task/\($0)/comm", encoding: .utf8)) ?? "")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
        let workers = { names().filter { $0 == (expected == 1 ? "MHD-single" : "MHD-worker") }.count }
        // A worker names itself once it runs: on a busy machine, a little after the server listens.
        try? waitUntil(timeout: 5) { workers() >= expected }
        #expect(workers() == expected, "\(names())")
        #expect(try server.client.get("/truck/orderCount").status == 200)
        #expect(!server.log.contains("Warning"), "\(server.log)")
        server.stop()
    }
}
