/// Why a request was refused, in terms a client can act on.
public struct ModelError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The request is malformed: bad JSON, a wrong type, an unknown field.
        case badRequest
        /// The named resource does not exist.
        case notFound
        /// The request is well formed but breaks a rule of the model.
        case unprocessable
        /// What a write changes is no longer as its `Precondition` expects.
        case preconditionFailed
        /// The store is closing and takes no more writes.
        case unavailable
        /// The database is locked by another connection; worth retrying shortly.
        case busy
        /// A quota of the client's is used up: worth retrying after
        /// `retryAfter` seconds, or once it gave something back.
        case tooManyRequests(retryAfter: Int)
        /// The server keeps no more of what the request would add (a quota
        /// for all clients together: observers, their memory).
        case insufficientStorage
    }

    public let kind: Kind
    public let detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { detail }

    public static func badRequest(_ detail: String) -> ModelError { ModelError(.badRequest, detail) }
    public static func notFound(_ detail: String) -> ModelError { ModelError(.notFound, detail) }
    public static func unprocessable(_ detail: String) -> ModelError { ModelError(.unprocessable, detail) }
}
