// swift-tools-version:6.0
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "observable-server",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "observable-server", targets: ["observable-server"]),
        // For the fuzz package in fuzz/, which builds with -sanitize=fuzzer.
        .library(name: "ObservableServerCore", targets: ["API", "HTTPServer", "Models", "ModelStore", "ModelStoreDatabases", "JSON"]),
        // The Swift client: the models as @Observable objects, kept current by the feed.
        .library(name: "ObservableClient", targets: ["ObservableClient"]),
        .executable(name: "observable-watch", targets: ["observable-watch"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The client's HTTP: SwiftNIO underneath, so that a waiting stream costs no CPU.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The client's @RemoteModel macro.
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
    ],
    targets: [
        // libmicrohttpd as Debian ships it, and the C the Swift side calls it
        // through (shim.h: wrappers for its variadic calls).
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(name: "Concurrency"),
        .target(
            name: "HTTPServer",
            dependencies: [
                "CMicroHTTPD", "Concurrency",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(name: "SQLiteStore", dependencies: ["CSQLite"]),
        .target(name: "PostgresClient", dependencies: ["CPostgres"]),
        .target(name: "JSON"),
        // docs/openapi.yaml, web/ and migrations/, built in by the EmbedFiles plugin.
        .target(name: "EmbeddedFiles", plugins: ["EmbedFiles"]),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["embed-files"]),
        .executableTarget(name: "embed-files", dependencies: ["Digest"]),
        .target(name: "Digest"),
        .target(
            name: "ModelObservation",
            dependencies: [
                "Concurrency", "JSON",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // The engine: model declarations, their representation, writes and
        // change recording, group commit, and the storage interface (rows,
        // change log, observers, and `ReadDurability` for their reads). It
        // imports neither engine, nor anything that knows HTTP.
        .target(
            name: "ModelStore",
            dependencies: [
                "ModelObservation", "JSON", "Concurrency",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Each engine's storage: its rows, change log, migrations in its
        // dialect, and its one way of making reads durable.
        .target(
            name: "ModelStoreSQLite",
            dependencies: [
                "ModelStore", "SQLiteStore", "ModelObservation", "JSON", "Concurrency",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "ModelStorePostgres",
            dependencies: [
                "ModelStore", "PostgresClient", "ModelObservation", "JSON", "Concurrency",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A store opened on the database a configuration names, SQLite or PostgreSQL.
        .target(
            name: "ModelStoreDatabases",
            dependencies: [
                "ModelStore", "ModelStoreSQLite", "ModelStorePostgres",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The seed systems, declared on the engine.
        .target(
            name: "Models",
            dependencies: [
                "ModelStore", "JSON", "ModelObservation", "Concurrency", "EmbeddedFiles",
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "API",
            dependencies: [
                "Models", "ModelStore", "ModelStoreDatabases", "HTTPServer", "ModelObservation", "JSON", "Concurrency", "EmbeddedFiles",
                "Digest",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The Swift client. It imports JSON (which links nothing) and Foundation
        // only: never the server, libmicrohttpd, SQLite or libpq.
        .target(
            name: "ObservableClient",
            dependencies: ["JSON", "ObservableClientMacros", .product(name: "AsyncHTTPClient", package: "async-http-client")],
            // Async methods run on their caller's actor: the client and its objects stay on one.
            swiftSettings: [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),
        // @RemoteModel: a class's stored properties become tracked, decoded,
        // narrowed and written back fields of a server resource.
        .macro(
            name: "ObservableClientMacros",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // A terminal example of the client: a live table of the truck and the grid.
        .executableTarget(name: "observable-watch", dependencies: ["ObservableClient"]),
        .executableTarget(
            name: "observable-server",
            dependencies: [
                "API", "ModelStore", "ModelStoreDatabases", "Models",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The client against real servers started as child processes.
        .testTarget(name: "ObservableClientTests", dependencies: ["ObservableClient", "JSON", "TestSupport", "ClientTestSupport"]),
        // Models declared in a user's own code, as an app declares them: only ObservableClient imported.
        .testTarget(name: "ClientModelDeclarationTests", dependencies: ["ObservableClient", "ClientTestSupport"]),
        // What the client's test targets share: servers started as child processes, another client, waiting.
        .target(name: "ClientTestSupport", dependencies: ["TestSupport"], path: "Tests/ClientTestSupport"),
        .testTarget(
            name: "ObservableClientMacrosTests",
            dependencies: [
                "ObservableClientMacros",
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(name: "APITests", dependencies: ["API", "HTTPServer", "ModelStore", "JSON"]),
        .testTarget(name: "ConcurrencyTests", dependencies: ["Concurrency", "TestSupport"]),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "Concurrency", "TestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        // What the test targets share: waiting on a condition with a deadline.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "ModelObservationTests", dependencies: ["ModelObservation"]),
        .testTarget(name: "SQLiteStoreTests", dependencies: ["SQLiteStore"]),
        .testTarget(
            name: "ModelStoreTests",
            dependencies: [
                "ModelStore", "ModelStoreSQLite", "ModelStoreDatabases", "ModelObservation", "Models", "SQLiteStore", "JSON", "Concurrency",
                "TestSupport",
            ]
        ),
        .testTarget(name: "EmbeddedFilesTests", dependencies: ["EmbeddedFiles"]),
        .testTarget(name: "ModelsTests", dependencies: ["Models", "ModelStore", "ModelStoreDatabases", "JSON", "Concurrency", "TestSupport"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "API", "HTTPServer", "Models", "ModelStore", "ModelStoreSQLite", "ModelStoreDatabases", "SQLiteStore", "PostgresClient",
                "Concurrency", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
