import ModelObservation
import Testing

/// Folding a query reader's changes (`coalesce=true`) keeps its copy what
/// the changes one by one would make it.
@Suite struct QueryCoalescingTests {
    static let query = "topping=is.null&sort=-glaze"

    static func change(_ seq: Int64, _ path: String, _ operation: Change.Operation, old: String? = nil, new: String? = nil) -> Change {
        Change(seq: seq, transaction: seq, path: path, operation: operation, old: old, new: new, keys: [], query: query)
    }

    /// An element's field set, the element leaving the query and coming
    /// back, then the field set back to where it started: the last set
    /// comes after the insert, which brought the value in between.
    @Test func setsAreNotFoldedAcrossTheElementLeavingAndComingBack() {
        let element = "/truck/donuts/d1/name"
        let changes = [
            Self.change(1, element, .set, old: "\"Glazed\"", new: "\"Bear Claw\""),
            Self.change(2, "/truck/donuts", .remove, old: #"{"id":"d1","name":"Bear Claw"}"#),
            Self.change(3, "/truck/donuts", .insert, new: #"{"id":"d1","name":"Bear Claw"}"#),
            Self.change(4, element, .set, old: "\"Bear Claw\"", new: "\"Glazed\""),
        ]
        let folded = Change.coalesce(changes)
        #expect(folded.map(\.seq) == [1, 2, 3, 4])
        #expect(folded.last?.new == "\"Glazed\"")
        // Between two of them, sets of one path fold as ever, across
        // another element's coming and going too.
        let plain = [
            Self.change(5, element, .set, old: "\"a\"", new: "\"b\""),
            Self.change(6, "/truck/donuts", .insert, new: #"{"id":"d2","name":"Jelly"}"#),
            Self.change(7, element, .set, old: "\"b\"", new: "\"a\""),
        ]
        #expect(Change.coalesce(plain).map(\.seq) == [6])
    }
}
