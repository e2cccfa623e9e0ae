import JSON
import ModelObservation
@testable import ModelStore
import Testing

/// What a query read takes from a number field's index: the ordinals its
/// conditions allow, and how many elements fall there.
@Suite struct QueryRangesTests {
    static func condition(_ op: ShapeQuery.Condition.Operator, _ values: JSONValue...) -> ShapeQuery.Condition {
        ShapeQuery.Condition(field: "quantity", op: op, values: values)
    }

    static func ordinal(_ value: JSONValue) -> Int64 { SortKey.ordinal(value)! }

    @Test func conditionsOnOneFieldLeaveTheRangesTheyAllow() {
        let (three, five, seven) = (Self.ordinal(3), Self.ordinal(5), Self.ordinal(7))
        #expect(Resource.ranges(of: [Self.condition(.eq, 5)]) == [five...five])
        #expect(Resource.ranges(of: [Self.condition(.in, 7, 3, 5)]) == [three...three, five...five, seven...seven])
        #expect(Resource.ranges(of: [Self.condition(.gte, 3), Self.condition(.lt, 7)]) == [three...seven])
        // Points are kept inside the range, and where two lists meet.
        #expect(Resource.ranges(of: [Self.condition(.in, 3, 5, 7), Self.condition(.gt, 4)]) == [five...five, seven...seven])
        #expect(Resource.ranges(of: [Self.condition(.in, 3, 5), Self.condition(.eq, 5)]) == [five...five])
        // Nothing can match: no range at all, so nothing is read.
        #expect(Resource.ranges(of: [Self.condition(.gt, 7), Self.condition(.lt, 3)]) == [])
        #expect(Resource.ranges(of: [Self.condition(.eq, 3), Self.condition(.eq, 5)]) == [])
        // Null sorts after every number.
        #expect(Resource.ranges(of: [Self.condition(.isNull)]) == [Int64.max...Int64.max])
        // What an index walk would not narrow is left to a pass.
        #expect(Resource.ranges(of: []) == nil)
        #expect(Resource.ranges(of: [Self.condition(.neq, 5), Self.condition(.notNull)]) == nil)
    }

    @Test func theElementsInRangesAreCountedUpToABound() {
        var pairs = PairSet()
        for position in Int64(1)...100 { pairs.insert(PairSet.Pair(first: Self.ordinal(.int(position % 10)), second: position)) }
        let four = Self.ordinal(4), six = Self.ordinal(6)
        #expect(Resource.count(pairs, in: [four...four], upTo: 1000) == 10)
        #expect(Resource.count(pairs, in: [four...six], upTo: 1000) == 30)
        #expect(Resource.count(pairs, in: [four...four, six...six], upTo: 15) == 15)
        #expect(Resource.count(pairs, in: [Self.ordinal(11)...Self.ordinal(20)], upTo: 1000) == 0)
    }
}
