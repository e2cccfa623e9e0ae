import ModelObservation

/// A key a custom read tracks that no declaration shows (the grid's rows,
/// which a dot's append changes), and its value now, as JSON text: what a
/// repair past retention answers for it, so that a reader of it hears, in
/// one `repair`, what it missed.
public struct View: Sendable {
    public let key: PropertyKey
    public let current: @Sendable (ModelState) -> String

    public init(_ key: PropertyKey, current: @escaping @Sendable (ModelState) -> String) {
        self.key = key
        self.current = current
    }
}
