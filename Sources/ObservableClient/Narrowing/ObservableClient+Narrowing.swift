import Foundation
import JSON

extension ObservableClient {
    /// Narrows the server's tracking to what the app actually read.
    ///
    /// Since loading (or the last narrowing), every property getter the app
    /// called — in `withObservationTracking`, in a SwiftUI body, anywhere —
    /// was noted. `narrow()` forgets the observer's reads on the server
    /// (`DELETE /observer/reads`) and reads again, with `fields=`, only those
    /// properties, so the feed stops bringing changes of the others: a view
    /// that loaded the whole truck but shows only `orderCount` is no longer
    /// sent donut renames. A property not read then is no longer kept
    /// current; reading it later tracks it again (one `GET` in the
    /// background, and its value is brought up to date).
    public func narrow() async throws {
        let observer = try await ensureObserver()
        let masks = objects.mapValues(\.readMask)
        for object in objects.values {
            object.readMask = 0
            object.trackedMask = 0
        }
        let answer = try await transport.send("DELETE", "/observer/reads", headers: ["Observer": observer])
        guard answer.status == 204 else {
            if answer.status == 404 {
                // The observer is gone: the new one reads everything again.
                dropObserver(observer)
                for object in objects.values { object.trackedMask = type(of: object).allFields }
                return
            }
            throw ObservableClientError.from(status: answer.status, body: answer.body)
        }
        for (query, object) in registrations(masks) {
            do {
                take(try await read(query), into: object, force: true)
            } catch ObservableClientError.notFound {
                continue  // removed meanwhile; the feed brings or brought its removal
            }
        }
    }

    /// The reads that track again what `masks` (object path → fields read)
    /// name, each with the object that takes its answer. A collection read
    /// whole is read once, with the fields any of its elements had read.
    private func registrations(_ masks: [String: UInt16]) -> [(String, any RemoteObject)] {
        var reads: [(String, any RemoteObject)] = []
        var covered = Set<String>()
        func mask(_ object: any RemoteObject) -> UInt16 { masks[object.path] ?? 0 }
        /// `fields=` with what any of `elements` had read, which they are tracked for now.
        func fields(_ elements: [any RemoteObject], _ names: [String]) -> String {
            let union = elements.reduce(UInt16(0)) { $0 | mask($1) }
            for element in elements {
                covered.insert(element.path)
                element.trackedMask = union
            }
            return "fields=" + ObservableClient.names(names, union, orId: true)
        }
        /// A singleton's reads: its values in one, each collection read with its elements' fields.
        func singletonReads<Model: RemoteModel>(_ object: Model, _ bits: UInt16) {
            var own: UInt16 = 0
            var collections: [(String, any RemoteObject)] = []
            for (bit, field) in Model._$schema.fields.enumerated() where bits & (1 << bit) != 0 {
                let elements = field.elements(of: object)
                switch field.kind {
                case .value:
                    own |= 1 << bit
                    continue
                case .elements(let paged):
                    var query = object.path + "?fields=" + field.name
                    if paged {
                        let size = min(max(elements.count, configuration.ordersPageSize), 1000)
                        query += "&\(field.name).limit=\(size)&\(field.name).order=desc"
                    }
                    collections.append((query + "&\(field.name)." + fields(elements, field.elementFields), object))
                case .rows:
                    collections.append((object.path + "?" + fields(elements, field.elementFields), object))
                }
                object.trackedMask |= 1 << bit
            }
            if own != 0 {
                reads.append((object.path + "?fields=" + ObservableClient.names(Model.fields, own, orId: false), object))
                object.trackedMask |= own
            }
            reads += collections
        }
        // The singletons and lists loaded, each with its collections.
        for path in loaded.singletons.union(loaded.lists).sorted() {
            guard let object = objects[path], mask(object) != 0 else { continue }
            covered.insert(path)
            if let list = object as? any PagedList {
                reads.append((list.firstPageQuery(fields: fields(list.held, list.elementFields), covering: list.held.count), list))
                list.trackedMask = type(of: list).allFields
            } else {
                singletonReads(object, mask(object))
            }
        }
        // Whatever was read and is not in a collection read whole: one by one.
        for (path, bits) in masks where bits != 0 && !covered.contains(path) {
            guard let object = objects[path] else { continue }
            reads.append((refreshQuery(object, bits), object))
            object.trackedMask |= bits
        }
        return reads
    }

    /// Notes that the app read a field the server no longer tracks (after a
    /// narrowing), and reads it again in the background, tracked.
    func refresh(_ object: any RemoteObject, field: Int) {
        guard !isClosed, observerID != nil else { return }
        object.trackedMask |= 1 << field
        pendingRefreshes[object.path, default: 0] |= 1 << field
        guard refreshTask == nil else { return }
        refreshTask = spawn { client in
            defer { client.refreshTask = nil }
            // Gather what one turn of the app reads.
            await Task.yield()
            while let (path, bits) = client.pendingRefreshes.first {
                client.pendingRefreshes[path] = nil
                guard let object = client.objects[path] else { continue }
                guard let answer = try? await client.read(client.refreshQuery(object, bits)) else { continue }
                client.take(answer, into: object, force: true)
            }
        }
    }

    /// The read of `bits` of one object.
    func refreshQuery(_ object: any RemoteObject, _ bits: UInt16) -> String {
        if let list = object as? any PagedList { return list.firstPageQuery(covering: list.held.count) }
        return query(object, bits)
    }

    private func query<Model: RemoteModel>(_ object: Model, _ bits: UInt16) -> String {
        let schema = Model._$schema
        // Rows are read whole.
        if object.hasRows { return object.path }
        var query = object.path + "?fields=" + ObservableClient.names(schema.names, bits, orId: false)
        for (bit, field) in schema.fields.enumerated() where bits & (1 << bit) != 0 && field.kind == .elements(paged: true) {
            let size = min(max(field.elements(of: object).count, configuration.ordersPageSize), 1000)
            query += "&\(field.name).limit=\(size)&\(field.name).order=desc"
        }
        return query
    }

    /// The names of the fields `bits` selects, comma-separated; `id` when none
    /// and `orId` (a collection read only for its membership).
    fileprivate static func names(_ fields: [String], _ bits: UInt16, orId: Bool) -> String {
        let selected = fields.indices.filter { bits & (1 << $0) != 0 }.map { fields[$0] }
        return selected.isEmpty && orId ? "id" : selected.joined(separator: ",")
    }
}
