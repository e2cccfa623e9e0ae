// Measures the client against bench/client/stand-in.py: resident memory per
// object while loading a grid, then changes applied per second, timed from
// the first change applied.
//   measure URL CHANGES
// Or, against a real server, the CPU the client's process uses while it
// holds its feed open and nothing changes:
//   measure idle URL SECONDS stream|long-polling
import Foundation
import ObservableClient

func residentBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
    return (Int(text.split(separator: " ")[1]) ?? 0) * 4096
}

/// User and system CPU seconds of this process so far.
func cpuSeconds() -> Double {
    let text = (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) ?? ""
    guard let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // utime and stime, fields 14 and 15 of the whole line (11 and 12 after the name).
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

if CommandLine.arguments[1] == "idle" {
    let url = URL(string: CommandLine.arguments[2])!
    let seconds = Double(CommandLine.arguments[3])!
    let polling = CommandLine.arguments[4] == "long-polling"
    var configuration = ObservableClient.Configuration()
    configuration.transport = polling ? .longPolling : .automatic
    let client = ObservableClient(baseURL: url, configuration: configuration)
    let truck = try await client.truck()
    _ = try await client.grid()
    _ = truck.orderCount
    let live: ObservableClient.ConnectionState = .live(polling ? .longPolling : .stream)
    let opened = Date()
    while client.connectionState != live, Date().timeIntervalSince(opened) < 30 { try await Task.sleep(for: .milliseconds(10)) }
    guard client.connectionState == live else {
        print("the feed did not open: \(client.connectionState)")
        exit(1)
    }
    // Settled: what the load started is done.
    try await Task.sleep(for: .seconds(1))
    let before = cpuSeconds()
    let began = Date()
    try await Task.sleep(for: .seconds(seconds))
    let used = cpuSeconds() - before
    let elapsed = Date().timeIntervalSince(began)
    print("idle on \(client.connectionState) for \(String(format: "%.1f", elapsed)) s: "
        + "\(String(format: "%.2f", used)) s of CPU, \(String(format: "%.2f", 100 * used / elapsed)) % of a core")
    await client.close()
    exit(0)
}

let url = URL(string: CommandLine.arguments[1])!
let expected = Int(CommandLine.arguments[2])!

let client = ObservableClient(baseURL: url)
_ = try await client.account()  // the observer and the feed, before measuring
let before = residentBytes()
let grid = try await client.grid()
let dots = grid.rows.joined().count
print("dots \(dots), resident bytes per dot \((residentBytes() - before) / max(dots, 1))")

var start = client.changesApplied
while client.changesApplied == start { try await Task.sleep(for: .milliseconds(1)) }
start = client.changesApplied
let began = Date()
while client.changesApplied - start < expected, Date().timeIntervalSince(began) < 120 {
    try await Task.sleep(for: .milliseconds(5))
}
let seconds = Date().timeIntervalSince(began)
let applied = client.changesApplied - start
print("applied \(applied) changes in \(String(format: "%.2f", seconds)) s: \(Int(Double(applied) / seconds)) per second")
await client.close()
