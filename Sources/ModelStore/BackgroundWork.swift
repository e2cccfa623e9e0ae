/// Work a model runs beside requests (advancing jobs), started once the
/// store serves and stopped before it closes.
public protocol BackgroundWork: Sendable {
    func start(_ store: Store)
    func stop()
}
