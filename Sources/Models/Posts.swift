import FoundationEssentials
import JSON
import ModelObservation
import ModelStore

/// Staggered posts (seed: StaggeredGrid): images with a height, in creation
/// order, dealt into columns.
public enum Posts {
    public static let posts = Resource.collection("posts", element: "post", at: "/posts", allowing: [.list, .create, .get, .delete],
                                                 queryable: ["height"]) {
        Field.text("imageURL", access: .createOnly, limits: TextLimits(maxLength: 2048, allowsBlank: true), rules: [imageURL],
                   schema: "ImageURL")
        height
    }
    public static let height = Stored<Double>(.number("height", access: .createOnly, rules: [heightRule], schema: "Height").checked(.above(0)))

    /// Above 0 and at most 100,000.
    @Sendable static func heightRule(_ name: String, _ value: JSONValue) throws {
        guard case .double(let height) = value, height > 0, height <= 100_000 else {
            throw ModelError.unprocessable("\(name) must be a number above 0 and at most 100000")
        }
    }

    /// An `http` or `https` URL with a host.
    @Sendable static func imageURL(_ name: String, _ value: JSONValue) throws {
        guard let url = value.stringValue else { return }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            throw ModelError.unprocessable("\(name) must be an http:// or https:// URL")
        }
        guard !url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }),
              let components = URLComponents(string: url), let host = components.host, !host.isEmpty
        else {
            throw ModelError.unprocessable("\(name) must be an http:// or https:// URL with a host")
        }
    }

    /// How posts are dealt into columns.
    enum Layout: String, CaseIterable {
        /// Post `i` goes to column `i % n`, as the seed's `setUpList` does.
        case roundRobin
        /// Each post goes to the column with the least total height so far;
        /// a tie goes to the leftmost of the tied columns.
        case balanced
    }

    static let columnsRange = 1...12
    static let defaultColumns = 2

    /// `GET /posts/staggered?columns=3&layout=balanced`: `{"columns": [[Post…], …]}`,
    /// reading what `GET /posts` reads.
    static let reads = [
        Read("/posts/staggered", fields: posts.selectableFields) { input, state in
            let columns = try columns(input.query("columns"))
            let layout = try layout(input.query("layout"))
            var dealt = [[Record]](repeating: [], count: columns)
            switch layout {
            case .roundRobin:
                for (index, post) in state[posts].values.enumerated() { dealt[index % columns].append(post) }
            case .balanced:
                var heights = [Double](repeating: 0, count: columns)
                for post in state[posts].values {
                    // `firstIndex` of the minimum: ties go to the leftmost column.
                    let shortest = heights.firstIndex(of: heights.min() ?? 0) ?? 0
                    dealt[shortest].append(post)
                    heights[shortest] += post[height]
                }
            }
            var builder = RepresentationBuilder(resource: posts.path)
            // Every post, dealt into columns: one read of the collection's
            // shape. A post made after it is inserted whole, so all its
            // fields count as read (`newest`).
            let fields = input.selection.shapeFields
            let newest = fields == nil ? Int64.max : (state[posts].last?.position ?? .min)
            builder.elements("columns", shape: Shape(collection: posts.path, fields: fields, newest: newest)) { builder in
                for column in dealt {
                    builder.array { builder in
                        for post in column { builder.object(resource: post.path) { posts.write(post, in: state, into: &$0, input.selection) } }
                    }
                }
            }
            return builder.finish()
        },
    ]

    /// `columns=`: an integer from 1 to 12, 2 when absent.
    static func columns(_ parameter: String?) throws -> Int {
        guard let parameter else { return defaultColumns }
        guard parameter.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let columns = Int(parameter), columnsRange.contains(columns)
        else {
            throw ModelError.badRequest("columns must be an integer from \(columnsRange.lowerBound) to \(columnsRange.upperBound)")
        }
        return columns
    }

    /// `layout=`: `roundRobin` (the default) or `balanced`.
    static func layout(_ parameter: String?) throws -> Layout {
        guard let parameter else { return .roundRobin }
        guard let layout = Layout(rawValue: parameter) else {
            throw ModelError.badRequest("layout must be one of: \(Layout.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return layout
    }
}
