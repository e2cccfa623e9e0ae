import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` while another thread opens and closes a file over and over,
/// and returns how often that thread's close found its file already closed.
/// Code in `body` that closes a descriptor twice, the second time after the
/// other thread got the same number, shows here; in a server, the second
/// close could take a connection's socket.
public func descriptorsClosedUnderneath(while body: () -> Void) -> Int {
    let watch = Watch()
    let finished = DispatchSemaphore(value: 0)
    let other = Thread {
        while !watch.isDone {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            if descriptor >= 0, close(descriptor) != 0 { watch.countClosedUnderneath() }
        }
        finished.signal()
    }
    other.start()
    body()
    watch.finish()
    finished.wait()
    return watch.closedUnderneath
}

private final class Watch: @unchecked Sendable {
    // Safe to share: both fields are only touched under `lock`.
    private let lock = NSLock()
    private var done = false
    private var count = 0

    var isDone: Bool { lock.withLock { done } }
    var closedUnderneath: Int { lock.withLock { count } }
    func finish() { lock.withLock { done = true } }
    func countClosedUnderneath() { lock.withLock { count += 1 } }
}
