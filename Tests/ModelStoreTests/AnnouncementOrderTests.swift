import Concurrency
@testable import ModelStore
import Testing

/// Announcements of a consumer (a parked poll, a stream, a poll answered at
/// once) reach every instance in the order they were sent. One from another
/// instance heard before this instance's own of the same observer comes
/// back names an older consumer: it must not end this instance's newer one.
@Suite struct AnnouncementOrderTests {
    static func heard(_ instance: String, _ observer: String, stream: Bool = false) -> ParkedAnnouncement {
        ParkedAnnouncement(instance: instance, observer: observer, stream: stream)
    }

    @Test func anAnnouncementHeardBeforeOurOwnComesBackIsOlderAndPassedOver() {
        let now = ServerClock.now
        // "a" announced a stream of x; "b" had announced a poll of x before.
        var unheard: [String: (count: Int, sent: ServerClock.Instant)] = ["x": (1, now)]
        let first = InstanceSharing.newer([Self.heard("b", "x"), Self.heard("a", "x", stream: true)], than: "a", unheard: &unheard, now: now)
        #expect(first.isEmpty)
        #expect(unheard.isEmpty)
        // Heard after it: newer, so it counts.
        let later = InstanceSharing.newer([Self.heard("b", "x")], than: "a", unheard: &unheard, now: now)
        #expect(later.map(\.instance) == ["b"])
    }

    @Test func otherObserversAndOurOwnAnnouncementsAreAsBefore() {
        let now = ServerClock.now
        var unheard: [String: (count: Int, sent: ServerClock.Instant)] = ["x": (2, now)]
        let heard = InstanceSharing.newer([Self.heard("a", "x"), Self.heard("b", "y"), Self.heard("b", "x"), Self.heard("a", "x"), Self.heard("c", "x")],
                                          than: "a", unheard: &unheard, now: now)
        // y was never ours; the first b/x came before our second x came back.
        #expect(heard.map { $0.instance + "/" + $0.observer } == ["b/y", "c/x"])
        #expect(unheard.isEmpty)
    }

    @Test func anAnnouncementNeverHeardBackHoldsOthersBackOnlyForAWhile() {
        let sent = ServerClock.now
        var unheard: [String: (count: Int, sent: ServerClock.Instant)] = ["x": (1, sent)]
        let soon = InstanceSharing.newer([Self.heard("b", "x")], than: "a", unheard: &unheard, now: sent.advanced(by: .seconds(1)))
        #expect(soon.isEmpty)
        let late = InstanceSharing.newer([Self.heard("b", "x")], than: "a", unheard: &unheard, now: sent.advanced(by: InstanceSharing.announcementHorizon + .seconds(1)))
        #expect(late.map(\.instance) == ["b"])
        #expect(unheard.isEmpty)
    }
}
