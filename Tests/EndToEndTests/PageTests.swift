import API
import Foundation
import Testing
import TestSupport

@Suite struct PageTests {
    /// What the page is made of: the path it is served at, its file in web/,
    /// and its content type.
    static let files: [(path: String, file: String, contentType: String)] = [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/assets/app.js", "app.js", "text/javascript; charset=utf-8"),
        ("/assets/style.css", "style.css", "text/css; charset=utf-8"),
        ("/assets/post-donuts.svg", "post-donuts.svg", "image/svg+xml; charset=utf-8"),
        ("/assets/post-lake.svg", "post-lake.svg", "image/svg+xml; charset=utf-8"),
        ("/assets/post-mountains.svg", "post-mountains.svg", "image/svg+xml; charset=utf-8"),
        ("/assets/post-sunset.svg", "post-sunset.svg", "image/svg+xml; charset=utf-8"),
    ]

    static func source(_ name: String) throws -> [UInt8] {
        let url = repositoryRoot.appendingPathComponent("web").appendingPathComponent(name)
        return Array(try Data(contentsOf: url))
    }

    @Test func servedFilesAreTheFilesInWebByteForByte() throws {
        let server = try TestServer()
        for (path, file, contentType) in Self.files {
            let response = try server.client.get(path)
            #expect(response.status == 200, "\(path)")
            #expect(response.header("Content-Type") == contentType, "\(path)")
            #expect(response.body == (try Self.source(file)), "\(path) differs from web/\(file)")
        }
        let listed = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("web").path)
        #expect(Set(listed.filter { !$0.hasPrefix(".") }) == Set(Self.files.map(\.file)))
    }

    @Test func filesAreRevalidatedWithAStrongETag() throws {
        let server = try TestServer()
        for (path, _, _) in Self.files {
            let first = try server.client.get(path)
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""), "a strong tag: \(etag)")
            #expect(first.header("Cache-Control") == "no-cache")
            #expect(first.header("X-Content-Type-Options") == "nosniff")

            let unchanged = try server.client.get(path, headers: ["If-None-Match": etag])
            #expect(unchanged.status == 304)
            #expect(unchanged.body.isEmpty)
            #expect(unchanged.header("ETag") == etag)
            #expect(unchanged.header("Cache-Control") == "no-cache")
            #expect(try server.client.get(path, headers: ["If-None-Match": "\"other\", W/" + etag]).status == 304)
            #expect(try server.client.get(path, headers: ["If-None-Match": "*"]).status == 304)

            let stale = try server.client.get(path, headers: ["If-None-Match": "\"0000\""])
            #expect(stale.status == 200)
            #expect(stale.body == first.body)
        }
        #expect(try server.client.get("/").header("ETag") != server.client.get("/assets/app.js").header("ETag"))
    }

    /// The tag is the start of the file's SHA-256 (as `sha256sum` computes
    /// it, independently of the build), so it changes exactly when the file does.
    @Test func etagIsTheStartOfTheFilesSHA256() throws {
        let server = try TestServer()
        for (path, file, _) in Self.files {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
            process.arguments = [repositoryRoot.appendingPathComponent("web").appendingPathComponent(file).path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let digest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(32)
            process.waitUntilExit()
            #expect(digest.count == 32)
            #expect(try server.client.get(path).header("ETag") == "\"" + digest + "\"", "\(path)")
        }
    }

    @Test func unknownAssetsAreNotFoundAndWritesAreNotAllowed() throws {
        let server = try TestServer()
        let missing = try server.client.get("/assets/missing.js")
        #expect(missing.status == 404)
        #expect(missing.header("Content-Type") == "application/problem+json")
        // An encoded slash never reaches routing.
        #expect(try server.client.get("/assets/..%2Findex.html").status == 400)
        #expect(try server.client.get("/assets/..%5Cindex.html").status == 404)
        let post = try server.client.post("/", [:])
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
        let head = try server.client.request("HEAD", "/assets/style.css")
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/css; charset=utf-8")
    }

    @Test func thePageIsOpenWhileTheModelsNeedATokenToRead() throws {
        let server = try TestServer { $0.access = AccessPolicy(writeToken: "write-0123456789", readToken: "read-0123456789") }
        for (path, _, _) in Self.files {
            #expect(try server.client.get(path).status == 200, "\(path)")
        }
        #expect(try server.client.get("/grid").status == 401)
    }

    @Test func thePageReferencesOnlyRelativeURLs() throws {
        for (_, file, _) in Self.files {
            // An SVG names its namespace by a URL that is never fetched.
            let text = String(decoding: try Self.source(file), as: UTF8.self)
                .replacingOccurrences(of: #"xmlns="http://www.w3.org/2000/svg""#, with: "")
            #expect(!text.contains("http://") && !text.contains("https://"), "web/\(file) names an absolute URL")
            #expect(!text.contains("\"//") && !text.contains("'//") && !text.contains("url(//"),
                    "web/\(file) names a protocol-relative URL")
            #expect(!text.contains("@import"), "web/\(file) imports a style sheet")
        }
        // Everything index.html loads is relative to it and is served.
        let server = try TestServer()
        let html = String(decoding: try Self.source("index.html"), as: UTF8.self)
        let references = Self.attributeValues(in: html, names: ["src", "href"])
        #expect(!references.isEmpty)
        for reference in references where !reference.hasPrefix("data:") {
            #expect(!reference.hasPrefix("/") && !reference.contains(":"), "\(reference) is not relative")
            #expect(try server.client.get("/" + reference).status == 200, "\(reference) is not served")
        }
        // Every API call of the script is relative too: `fetch` is called in
        // two places (every call, and the stream of the feed), each with a
        // path that does not start with a slash.
        let script = String(decoding: try Self.source("app.js"), as: UTF8.self)
        let fetched = script.components(separatedBy: "fetch(").dropFirst().map { $0.prefix { $0 != "," && $0 != "?" } }
        #expect(fetched.count == 2)
        #expect(fetched.allSatisfy { $0 == "path" || $0.hasPrefix("`observer/") }, "\(fetched)")
        #expect(!script.contains("api(\"GET\", \"/") && !script.contains("api(\"POST\", \"/"))
    }

    /// The values of `name="…"` attributes in `html`.
    static func attributeValues(in html: String, names: [String]) -> [String] {
        var values: [String] = []
        for name in names {
            var rest = Substring(html)
            while let start = rest.range(of: " \(name)=\"") {
                rest = rest[start.upperBound...]
                guard let end = rest.firstIndex(of: "\"") else { break }
                values.append(String(rest[..<end]))
                rest = rest[end...]
            }
        }
        return values
    }
}
