@testable import ModelObservation
import Testing

/// Keys stored joined by newlines (the change log, sets of keys read, the
/// read journal) come back as they went in.
@Suite struct PropertyKeyTests {
    @Test func joinedKeysComeBackAsTheyWentIn() {
        let paths = ["/truck/name", "/games/a/cards/b/isFaceUp", "/truck/donuts/é/name", "/posts/🍩/height", "/x"]
        #expect(PropertyKey.keys(joined: paths.joined(separator: "\n")) == paths.map { PropertyKey($0) })
        #expect(PropertyKey.keys(joined: "").isEmpty)
        #expect(PropertyKey.keys(joined: "/a\n\n/b\n") == [PropertyKey("/a"), PropertyKey("/b")])
        // A combining mark after a newline stays with the key it starts.
        #expect(PropertyKey.keys(joined: "/a\n\u{301}/b") == [PropertyKey("/a"), PropertyKey("\u{301}/b")])
    }
}
