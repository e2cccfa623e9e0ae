/// Something waiting for an observer's next change: a parked long-poll,
/// or an event stream with nothing to send.
///
/// Its state is the registry's own: the feed subclasses it to carry what
/// answers it (a suspended connection, a stream), and the registry calls
/// none of that code, under its lock or elsewhere. `@unchecked Sendable`:
/// what it holds here is atomic; a subclass answers for its own.
open class ChangeWaiter: @unchecked Sendable {
    public init() {}
}
