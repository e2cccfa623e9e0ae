import JSON
import ModelObservation

/// The standard writes every model gets from its declaration, prepared for
/// `Store.write` or `Store.submit`.
extension Resource {
    /// Creates an element from a checked body. Its id and, for an element
    /// without computed or nested members, its representation are made
    /// before the writer lock, so that writes wait less for it.
    public func create(_ body: ValidatedBody) -> PreparedWrite<Answer> {
        let record = Record.new(self, body.values)
        guard computed.isEmpty && nested.isEmpty else {
            return PreparedWrite { tx in
                let stored = try tx.insert(record, into: self)
                return .created(self.representation(of: stored, in: tx.state, tracking: false), at: stored.path)
            }
        }
        let representation = representation(of: record, in: ModelState(seq: 0))
        let inserted = PendingChange.insert(into: path, element: representation.string, elementKeys: representation.reads)
        return PreparedWrite { tx in
            try tx.insert(record, into: self, announce: .custom(inserted))
            return .created(representation, at: record.path)
        }
    }

    /// The element `id` (`notFound` when there is none), or the singleton's object.
    public func record(_ id: String, in state: ModelState) throws(ModelError) -> Record {
        if kind == .singleton { return state[singleton: self] }
        guard let record = state[self][id] else { throw ModelError.notFound("no \(elementName) \(id)") }
        return record
    }

    /// Changes the fields a patch's body names.
    public func patch(_ id: String, _ body: ValidatedBody, onlyIf condition: Precondition?) -> PreparedWrite<Answer> {
        PreparedWrite { tx in
            let record = try tx.update(self, id, onlyIf: condition) { record in
                for (name, value) in body.values { record[name] = value }
            }
            // A whole singleton can be large (the truck with every donut
            // and order): rendered after the commit, not holding the lock.
            let state = tx.state
            return .ok { self.representation(of: record, in: state, tracking: false) }
        }
    }

    public func delete(_ id: String, onlyIf condition: Precondition?) -> PreparedWrite<Answer> {
        PreparedWrite { tx in
            try tx.delete(self, id, onlyIf: condition)
            return .removed
        }
    }
}
