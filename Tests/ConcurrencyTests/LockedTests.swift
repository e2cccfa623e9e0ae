import Concurrency
import Dispatch
import Testing

@Suite struct LockedTests {
    @Test func concurrentUpdatesAreNotLost() {
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 {
                counter.withLock { $0 += 1 }
            }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test func withLockReturnsTheBodysResultAndRethrows() {
        struct Refused: Error {}
        let value = Locked([1, 2])
        #expect(value.withLock { $0.reduce(0, +) } == 3)
        #expect(throws: Refused.self) { try value.withLock { _ in throw Refused() } }
        // A throwing body leaves the lock free.
        #expect(value.withLock { $0.count } == 2)
    }

    @Test func aWeakSlotDoesNotKeepItsObjectAlive() {
        final class Object {}
        var object: Object? = Object()
        let slot = Locked(Weak(object))
        #expect(slot.withLock { $0.object } != nil)
        object = nil
        #expect(slot.withLock { $0.object } == nil)
    }
}
