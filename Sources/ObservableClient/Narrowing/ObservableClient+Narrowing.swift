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
        func fields<Object: RemoteObject>(_ elements: [Object]) -> (String, UInt16) {
            let union = elements.reduce(UInt16(0)) { $0 | mask($1) }
            for element in elements {
                covered.insert(element.path)
                element.trackedMask = union
            }
            return ("fields=" + names(Object.fields, union, orId: true), union)
        }
        if let truck = objects["/truck"] as? Truck, mask(truck) != 0 {
            let own = mask(truck) & 0b1001
            if own != 0 {
                reads.append(("/truck?fields=" + names(Truck.fields, own, orId: false), truck))
                truck.trackedMask |= own
            }
            if mask(truck) & 0b0010 != 0 {
                reads.append(("/truck?fields=donuts&donuts." + fields(truck._donuts).0, truck))
                truck.trackedMask |= 0b0010
            }
            if mask(truck) & 0b0100 != 0 {
                let size = max(truck._orders.count, configuration.ordersPageSize)
                reads.append(("/truck?fields=orders&orders.limit=\(min(size, 1000))&orders.order=desc&orders." + fields(truck._orders).0, truck))
                truck.trackedMask |= 0b0100
            }
            covered.insert(truck.path)
        }
        if let grid = objects["/grid"] as? Grid, mask(grid) != 0 {
            reads.append(("/grid?" + fields(grid._rows.flatMap { $0 }).0, grid))
            grid.trackedMask = Grid.allFields
            covered.insert(grid.path)
        }
        func listRead<List: ElementList>(_ list: List) {
            reads.append((list.firstPageQuery(fields: fields(list.held).0, covering: list.held.count), list))
            list.trackedMask = List.allFields
            covered.insert(list.path)
        }
        for path in ["/jobs", "/posts", "/games"] {
            if let list = objects[path] as? any ElementList, mask(list) != 0 { listRead(list) }
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
        switch object {
        case let truck as Truck:
            var query = "/truck?fields=" + names(Truck.fields, bits, orId: false)
            if bits & 0b0100 != 0 {
                query += "&orders.limit=\(min(max(truck._orders.count, configuration.ordersPageSize), 1000))&orders.order=desc"
            }
            return query
        case let list as any ElementList:
            return list.firstPageQuery(covering: list.held.count)
        case is Grid:
            return object.path
        default:
            return object.path + "?fields=" + names(type(of: object).fields, bits, orId: false)
        }
    }
}

/// The names of the fields `bits` selects, comma-separated; `id` when none
/// and `orId` (a collection read only for its membership).
private func names(_ fields: [String], _ bits: UInt16, orId: Bool) -> String {
    let selected = fields.indices.filter { bits & (1 << $0) != 0 }.map { fields[$0] }
    return selected.isEmpty && orId ? "id" : selected.joined(separator: ",")
}
