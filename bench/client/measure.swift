// Measures the client against bench/client/stand-in.py: resident memory per
// object while loading a grid, then changes applied per second, timed from
// the first change applied.
//   measure URL CHANGES
import Foundation
import ObservableClient

let url = URL(string: CommandLine.arguments[1])!
let expected = Int(CommandLine.arguments[2])!

func residentBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "0 0"
    return (Int(text.split(separator: " ")[1]) ?? 0) * 4096
}

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
