import JSON
import ModelObservation

/// A member's name with its JSON key, `"name":`, encoded once.
struct MemberName: Sendable {
    let name: String
    let encoded: [UInt8]

    init(_ name: String) {
        self.name = name
        var encoded: [UInt8] = []
        JSONWriter.writeString(name, into: &encoded)
        encoded.append(UInt8(ascii: ":"))
        self.encoded = encoded
    }
}

/// Builds a representation field by field, writing the body as it goes
/// and recording each field's key. Nested elements (`object` inside
/// `elements`) are written into the same body.
public struct RepresentationBuilder {
    private var bytes: [UInt8] = []
    private(set) var reads: [PropertyKey] = []
    /// The path of the object being written: fields' keys start with it.
    private(set) var resource: String
    /// Whether a value was written since the last `{` or `[`.
    private var needsComma = false
    /// Whether reads are collected (not for a write's answer).
    private let tracking: Bool
    /// How many shapes the builder is inside: their elements' fields are
    /// read through the shape, not one key each.
    private var quiet = 0
    private var isTracking: Bool { tracking && quiet == 0 }
    /// The next pages of the pages written (see `Representation.nextPages`).
    var nextPages: [NextPage] = []
    /// Whether a collection is read as a shape; without, as its
    /// membership's key and each property of each element shown (what
    /// an element's insert or remove names to readers of its properties).
    private let shapes: Bool
    /// Where the body goes a piece at a time (a large read), or nil: kept whole.
    private let output: RepresentationOutput?

    /// A builder of the object at `resource`.
    public init(resource: String, fields: Int = 4, tracking: Bool = true, shapes: Bool = true, output: RepresentationOutput? = nil) {
        self.resource = resource
        self.tracking = tracking
        self.shapes = shapes
        self.output = output
        bytes.reserveCapacity(32 * fields + 2)
        bytes.append(UInt8(ascii: "{"))
        if tracking { reads.reserveCapacity(fields) }
    }

    // Each name is given once per object (the models' field lists), so no
    // name is looked for before it is written.
    private mutating func name(_ name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        JSONWriter.writeString(name, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = true
    }

    /// A name written as made once: `"name":`, escaped.
    private mutating func name(_ name: MemberName) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: name.encoded)
        needsComma = true
    }

    /// A field whose name was encoded once and whose key the caller has:
    /// the representation of a declared member.
    mutating func field(_ name: MemberName, _ value: JSONValue, key: @autoclosure () -> PropertyKey, _ selection: FieldSelection) {
        guard selection.includes(name.name) else { return }
        self.name(name)
        JSONWriter.write(value, into: &bytes)
        if isTracking { reads.append(key()) }
    }

    /// A nested array under `name` read as `shape`: one read for every
    /// element it shows (and will show), whose fields are not tracked
    /// one by one.
    mutating func elements(_ name: MemberName, shape: Shape, _ selection: FieldSelection,
                           _ body: (inout RepresentationBuilder) -> Void)
    {
        guard selection.includes(name.name) else { return }
        self.name(name)
        needsComma = false
        guard shapes else {
            if isTracking { reads.append(PropertyKey(shape.collection)) }
            array(body)
            return
        }
        if isTracking { reads.append(shape.key) }
        quiet += 1
        array(body)
        quiet -= 1
    }

    /// A nested collection under `name` read as `shape` (see above).
    public mutating func elements(_ name: String, shape: Shape, _ selection: FieldSelection = .all,
                                  _ body: (inout RepresentationBuilder) -> Void)
    {
        elements(MemberName(name), shape: shape, selection, body)
    }

    /// A nested array under a declared member's `name`, read as `key`.
    mutating func elements(_ name: MemberName, key: PropertyKey, _ selection: FieldSelection,
                           _ body: (inout RepresentationBuilder) -> Void)
    {
        guard selection.includes(name.name) else { return }
        self.name(name)
        needsComma = false
        if isTracking { reads.append(key) }
        array(body)
    }

    /// A field that cannot change (an id): in the body, not a read.
    public mutating func constant(_ name: String, _ value: JSONValue) {
        self.name(name)
        JSONWriter.write(value, into: &bytes)
    }

    public mutating func field(_ name: String, _ value: JSONValue, _ selection: FieldSelection = .all) {
        let resource = resource
        field(name, value, key: PropertyKey(resource, name), selection)
    }

    /// A field whose key the caller already has (`resource/name`).
    public mutating func field(_ name: String, _ value: JSONValue, key: @autoclosure () -> PropertyKey, _ selection: FieldSelection = .all) {
        guard selection.includes(name) else { return }
        self.name(name)
        JSONWriter.write(value, into: &bytes)
        if isTracking { reads.append(key()) }
    }

    /// A nested collection whose elements `body` writes (with `object`):
    /// its membership key, then what the elements read. `body` runs only
    /// when the collection is selected.
    public mutating func elements(_ name: String, _ selection: FieldSelection = .all, _ body: (inout RepresentationBuilder) -> Void) {
        elements(name, key: PropertyKey(resource, name), selection, body)
    }

    /// A nested array under `name` whose membership is read as `key` (none when nil).
    public mutating func elements(_ name: String, key: PropertyKey?, _ selection: FieldSelection = .all,
                                  _ body: (inout RepresentationBuilder) -> Void)
    {
        guard selection.includes(name) else { return }
        self.name(name)
        needsComma = false
        if isTracking, let key { reads.append(key) }
        array(body)
    }

    /// An array as an element of the array being written (rows of dots).
    public mutating func array(_ body: (inout RepresentationBuilder) -> Void) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A read of `key` that writes nothing (a membership the body reflects).
    public mutating func track(_ key: PropertyKey) {
        if isTracking { reads.append(key) }
    }

    /// An element of `elements`: the object at `resource`, whose fields
    /// `body` writes.
    public mutating func object(resource: String, _ body: (inout RepresentationBuilder) -> Void) {
        // A body no longer wanted (its client left): the rest is skipped.
        if let output, !output.isOpen { return }
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        let outer = self.resource
        self.resource = resource
        body(&self)
        self.resource = outer
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
        if let output, bytes.count >= RepresentationOutput.piece { output.take(&bytes) }
    }

    /// A nested object under `name`, at `resource`, whose fields `body` writes.
    public mutating func object(_ name: String, resource: String, _ body: (inout RepresentationBuilder) -> Void) {
        self.name(name)
        needsComma = false
        object(resource: resource, body)
    }

    /// The representation: the object closed, its body and reads handed over.
    public mutating func finish() -> Representation {
        bytes.append(UInt8(ascii: "}"))
        if let output {
            output.take(&bytes)
            let streamed = output.isWhole ? nil : StreamedBody(length: output.length, digest: output.digest.value)
            return Representation(bytes: output.kept ?? [], reads: reads, nextPages: nextPages, streamed: streamed)
        }
        var body: [UInt8] = []
        swap(&body, &bytes)
        return Representation(bytes: body, reads: reads, nextPages: nextPages)
    }
}
