/// Limits on a text field's value: in characters (Unicode code points, as
/// JSON Schema's `maxLength` counts them, so the API reference states the
/// rule exactly), in bytes (what storing, logging and sending it costs),
/// and in code points per character a reader sees (a grapheme cluster: so
/// no one of them is a wall of combining marks).
public struct TextLimits: Sendable {
    public var maxLength: Int
    /// At most this many bytes in UTF-8; `4 × maxLength` unless given, so
    /// that any text of at most `maxLength` code points fits.
    public var maxBytes: Int
    public var allowsBlank: Bool

    /// The most code points one character may combine. The longest
    /// characters of real text (emoji ZWJ sequences such as a kiss with two
    /// skin tones, subdivision flags, Indic conjuncts) have about ten.
    public static let maxScalarsPerCharacter = 16

    public init(maxLength: Int, maxBytes: Int? = nil, allowsBlank: Bool = false) {
        self.maxLength = maxLength
        self.maxBytes = maxBytes ?? 4 * maxLength
        self.allowsBlank = allowsBlank
    }

    /// Not blank, at most 200 characters (and 800 bytes): names and labels.
    public static let standard = TextLimits(maxLength: 200)

    var rule: Field.Rule {
        let limits = self
        return { name, value in
            guard let text = value.stringValue else { return }
            if !limits.allowsBlank && Self.isBlank(text) { throw ModelError.unprocessable("\(name) must not be empty") }
            // Characters are code points, as the API reference's `maxLength`
            // counts them; no more than there are bytes, so only a text of
            // more bytes than the limit is counted. The walk stops after
            // `maxLength + 1`: a megabyte of letters costs no more than 201.
            var count = 0
            if text.utf8.count > limits.maxLength {
                for _ in text.unicodeScalars {
                    count += 1
                    if count > limits.maxLength { break }
                }
            }
            if count > limits.maxLength { throw ModelError.unprocessable("\(name) must be at most \(limits.maxLength) characters") }
            if text.utf8.count > limits.maxBytes {
                throw ModelError.unprocessable("\(name) must be at most \(limits.maxBytes) bytes in UTF-8")
            }
            // What a reader sees as one character (a grapheme cluster) combines at most 16 code points.
            var longest = 0, index = text.startIndex
            while index < text.endIndex {
                let next = text.index(after: index)
                longest = max(longest, text.unicodeScalars.distance(from: index, to: next))
                index = next
            }
            if longest > Self.maxScalarsPerCharacter {
                throw ModelError.unprocessable(
                    "\(name) must not combine more than \(Self.maxScalarsPerCharacter) code points into one character")
            }
        }
    }

    /// Whether a reader would see nothing: every character is white space
    /// (its first code point is, as `Character.isWhitespace` says) or made
    /// only of invisible code points.
    static func isBlank(_ text: String) -> Bool {
        text.allSatisfy { $0.isWhitespace || $0.unicodeScalars.allSatisfy(isInvisible) }
    }

    /// White space, controls, format characters (Cf: U+200B ZERO WIDTH SPACE,
    /// U+FEFF, U+00AD SOFT HYPHEN, U+2060 WORD JOINER, bidi marks, tags) and
    /// the other default-ignorable code points (U+3164 HANGUL FILLER,
    /// variation selectors, U+034F COMBINING GRAPHEME JOINER): by Unicode's
    /// properties, not a list.
    static func isInvisible(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .format, .control: return true
        default: return properties.isWhitespace || properties.isDefaultIgnorableCodePoint
        }
    }
}
