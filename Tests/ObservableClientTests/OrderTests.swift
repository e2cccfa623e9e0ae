import ClientTestSupport
import JSON
@testable import ObservableClient
import Testing

/// The order of a list shown newest first does not come from ids: two made
/// in one millisecond compare either way.
@Suite struct OrderTests {
    static func elements(_ ids: [String]) -> [JSONValue] {
        ids.map { id in
            var element = JSONObject()
            element["id"] = .string(id)
            return .object(element)
        }
    }

    static func ids(_ elements: [JSONValue]) -> [String] {
        elements.compactMap(\.id)
    }

    @Test func aReadKeepsTheServersOrderEachOnce() {
        // "a" is newer than "b", though it sorts before it.
        let read = newestFirst(Self.elements(["a", "b", "a", "c"]), repaired: false, current: [])
        #expect(Self.ids(read) == ["a", "b", "c"])
    }

    @Test func aRepairKeepsTheHeldOrderAndPutsTheInsertedFirst() {
        // Two windows, each oldest first, the older one first; "0" and "1"
        // were inserted since ("1" the newer), and "b" removed.
        let repaired = newestFirst(Self.elements(["d", "c", "a", "0", "1"]), repaired: true, current: ["a", "b", "c", "d"])
        #expect(Self.ids(repaired) == ["1", "0", "a", "c", "d"])
    }
}
