/// When an observer could expire at the earliest (`State.expiries`).
struct Expiry: Comparable {
    let time: Double
    let id: ObserverKey

    init(at time: Double, _ id: ObserverKey) {
        self.time = time
        self.id = id
    }

    static func < (a: Expiry, b: Expiry) -> Bool { a.time < b.time }
    static func == (a: Expiry, b: Expiry) -> Bool { a.time == b.time && a.id == b.id }
}
