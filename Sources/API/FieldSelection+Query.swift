import ModelStore

/// The fields a query shows (`fields=a,b`).
extension FieldSelection {
    /// Parses `fields=a,b` against the fields the resource has (`allowed`):
    /// every field when there is no such parameter.
    init(query parameter: String?, allowed: [String]) throws(ModelError) {
        guard let parameter else {
            self = .all
            return
        }
        let requested = parameter.split(separator: ",", omittingEmptySubsequences: false).map(\.trimmingSpaces)
        for name in requested where !allowed.contains(name) {
            throw .badRequest("unknown field \"\(name)\" in fields; known fields: \(allowed.joined(separator: ", "))")
        }
        self.init(names: Set(requested))
    }
}
