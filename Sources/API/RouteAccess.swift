/// Who may call a route when tokens are configured (see `AccessPolicy`).
public enum RouteAccess: Sendable {
    /// Anyone (health probes).
    case open
    /// Readers: every `GET`, and creating, deleting and clearing one's observer.
    case read
    /// Writers: everything that changes a model.
    case write
}
