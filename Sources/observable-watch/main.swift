// A live table of the truck and the grid, redrawn whenever the server
// changes what it shows; or, with --drive, a stream of writes for another
// terminal to watch.
//
//   swift run observable-watch [--url http://localhost:8080] [--token TOKEN]
//   swift run observable-watch --drive [--url …] [--every 0.7]
import Foundation
import Observation
import ObservableClient

var arguments = CommandLine.arguments.dropFirst()
var url = URL(string: ProcessInfo.processInfo.environment["OBSERVABLE_URL"] ?? "http://localhost:8080")!
var token = ProcessInfo.processInfo.environment["OBSERVABLE_TOKEN"]
var drive = false
var every = 0.7
while let argument = arguments.popFirst() {
    switch argument {
    case "--url": url = arguments.popFirst().flatMap(URL.init(string:)) ?? url
    case "--token": token = arguments.popFirst()
    case "--drive": drive = true
    case "--every": every = arguments.popFirst().flatMap(Double.init) ?? every
    default:
        print("usage: observable-watch [--url URL] [--token TOKEN] [--drive [--every SECONDS]]")
        exit(64)
    }
}

let client = ObservableClient(baseURL: url, token: token)
let truck: Truck
let grid: Grid
let biggest: QueryList<Order>
do {
    truck = try await client.truck()
    grid = try await client.grid()
    // A query read kept current: the five biggest orders, whatever the donut.
    biggest = try await client.orders(sortedBy: .descending("quantity"), limit: 5)
} catch {
    print("cannot load from \(url): \(error)")
    exit(1)
}

/// The table, reading exactly what it shows.
@MainActor func table() -> String {
    var lines: [String] = []
    lines.append("\(truck.name) — \(truck.orderCount) orders — \(url.absoluteString) \(client.connectionState)")
    lines.append("")
    lines.append("MENU")
    for donut in truck.donuts {
        let extras = [donut.glaze.map { "\($0) glaze" }, donut.topping].compactMap { $0 }.joined(separator: ", ")
        lines.append("  \(donut.name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(donut.dough) dough\(extras.isEmpty ? "" : ", " + extras)")
    }
    lines.append("")
    lines.append("NEWEST ORDERS")
    let names = Dictionary(truck.donuts.map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
    for order in truck.orders.prefix(8) {
        lines.append("  \(order.quantity) × \(names[order.donutId] ?? "(off the menu)")")
    }
    if truck.orders.isEmpty { lines.append("  none") }
    lines.append("")
    lines.append("BIGGEST ORDERS  (a query: sort=-quantity, limit 5)")
    for order in biggest.elements.prefix(5) {
        lines.append("  \(order.quantity) × \(names[order.donutId] ?? "(off the menu)")")
    }
    if biggest.elements.isEmpty { lines.append("  none") }
    lines.append("")
    lines.append("GRID  (● tapped, ◆ random, · still)")
    for row in grid.rows {
        lines.append("  " + row.map { $0.isTapAnimated ? "●" : $0.isRandomAnimated ? "◆" : "·" }.joined(separator: " "))
    }
    return lines.joined(separator: "\n")
}

if drive {
    let names = ["Glazed", "Maple Bar", "Cruller", "Bear Claw", "Old Fashioned", "Jelly", "Boston Cream"]
    print("driving \(url) every \(every) s; run `swift run observable-watch` in another terminal to watch")
    while true {
        do {
            switch Int.random(in: 0..<6) {
            case 0, 1:
                if let donut = truck.donuts.randomElement() {
                    let quantity = Int.random(in: 1...6)
                    try await truck.placeOrder(donut, quantity: quantity)
                    print("ordered \(quantity) × \(donut.name)")
                }
            case 2:
                if let donut = truck.donuts.randomElement(), let name = names.randomElement() {
                    try await donut.rename(to: name)
                    print("renamed \(donut.id.suffix(4)) to \(name)")
                }
            case 3:
                if let dot = grid.rows.randomElement()?.randomElement() {
                    try await dot.tap()
                    print("tapped \(dot.id.suffix(4))")
                }
            case 4:
                try await grid.random()
                for dot in grid.rows.joined() where dot.isRandomAnimated && Bool.random() {
                    try await dot.setRandomAnimated(false)
                }
                print("random dot")
            default:
                if truck.orders.count > 6, let oldest = truck.orders.last {
                    try await oldest.cancel()
                    print("cancelled an order of \(oldest.quantity)")
                }
            }
        } catch {
            // A conflict means another writer was first: the feed brings its change.
            print("refused: \(error)")
        }
        try await Task.sleep(for: .seconds(every))
    }
} else {
    while true {
        // Drawn once; the next change of anything it read wakes the loop.
        await withCheckedContinuation { (changed: CheckedContinuation<Void, Never>) in
            let text = withObservationTracking { table() } onChange: { changed.resume() }
            FileHandle.standardOutput.write(Data(("\u{1B}[H\u{1B}[2J" + text + "\n").utf8))
        }
        // Let a burst of transactions land before drawing again.
        try await Task.sleep(for: .milliseconds(30))
    }
}
