import JSON
import ModelObservation

/// What a read returns: the JSON body and the property keys it contains,
/// which become an observer's reads.
public struct Representation: Sendable {
    public var json: JSONValue
    public var reads: [PropertyKey]

    public init(json: JSONValue, reads: [PropertyKey]) {
        self.json = json
        self.reads = reads
    }

    public var bytes: [UInt8] { JSONWriter.bytes(json) }

    /// A strong entity tag of the serialised body.
    public static func etag(of bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        // `"` + 16 hex digits + `"`, written in place.
        return String(unsafeUninitializedCapacity: 18) { buffer in
            let digits: StaticString = "0123456789abcdef"
            buffer[0] = UInt8(ascii: "\"")
            for i in 0..<16 {
                buffer[16 - i] = digits.utf8Start[Int((hash >> (UInt64(i) * 4)) & 0xf)]
            }
            buffer[17] = UInt8(ascii: "\"")
            return 18
        }
    }

    public var etag: String { Self.etag(of: bytes) }
}

/// Which fields of a resource a read asked for (`?fields=a,b`).
public struct FieldSelection: Sendable {
    let names: Set<String>?

    /// Every field.
    public static let all = FieldSelection(names: nil)

    /// Parses `fields=a,b` against the fields the resource has.
    public init(_ parameter: String?, allowed: [String]) throws(ModelError) {
        guard let parameter else {
            names = nil
            return
        }
        let requested = parameter.split(separator: ",", omittingEmptySubsequences: false).map {
            String($0).trimmingCharacters(in: " ")
        }
        for name in requested where !allowed.contains(name) {
            throw .badRequest("unknown field \"\(name)\" in fields; known fields: \(allowed.joined(separator: ", "))")
        }
        names = Set(requested)
    }

    private init(names: Set<String>?) {
        self.names = names
    }

    public func includes(_ name: String) -> Bool {
        names?.contains(name) ?? true
    }
}

extension String {
    func trimmingCharacters(in character: Character) -> String {
        var s = Substring(self)
        while s.first == character { s.removeFirst() }
        while s.last == character { s.removeLast() }
        return String(s)
    }
}

/// Builds a representation field by field, recording each field's key.
struct RepresentationBuilder {
    var object = JSONObject()
    var reads: [PropertyKey] = []
    let resource: String

    init(resource: String) {
        self.resource = resource
    }

    /// A field that cannot change (an id): in the body, not a read.
    // Each name is given once per builder (the models' field lists), so the
    // object is appended to without a search.
    mutating func constant(_ name: String, _ value: JSONValue) {
        object.append(name, value)
    }

    mutating func field(_ name: String, _ value: JSONValue, _ selection: FieldSelection = .all) {
        let resource = resource
        field(name, value, key: PropertyKey(resource, name), selection)
    }

    /// A field whose key the caller already has (`resource/name`).
    mutating func field(_ name: String, _ value: JSONValue, key: @autoclosure () -> PropertyKey, _ selection: FieldSelection = .all) {
        guard selection.includes(name) else { return }
        object.append(name, value)
        reads.append(key())
    }

    /// A nested collection: its membership key plus whatever its elements read.
    /// `elements` is built only when the collection is selected.
    mutating func collection(_ name: String, _ elements: @autoclosure () -> [Representation], _ selection: FieldSelection = .all) {
        guard selection.includes(name) else { return }
        let elements = elements()
        object.append(name, .array(elements.map(\.json)))
        reads.append(PropertyKey(resource, name))
        for element in elements { reads.append(contentsOf: element.reads) }
    }

    var representation: Representation { Representation(json: .object(object), reads: reads) }
}
