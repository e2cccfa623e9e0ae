// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "observable-server",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "observable-server", targets: ["observable-server"]),
        // For the fuzz package in fuzz/, which builds with -sanitize=fuzzer.
        .library(name: "ObservableServerCore", targets: ["API", "HTTPServer", "Models", "JSON"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
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
        .target(name: "Locks"),
        .target(
            name: "HTTPServer",
            dependencies: [
                "CMicroHTTPD", "Locks",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(name: "SQLiteStore", dependencies: ["CSQLite"]),
        .target(name: "JSON"),
        // docs/openapi.yaml, web/ and migrations/, built in by the EmbedFiles plugin.
        .target(name: "EmbeddedFiles", plugins: ["EmbedFiles"]),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["embed-files"]),
        .executableTarget(name: "embed-files"),
        .target(
            name: "ModelObservation",
            dependencies: ["Locks", .product(name: "DequeModule", package: "swift-collections")]
        ),
        .target(
            name: "Models",
            dependencies: [
                "ModelObservation", "SQLiteStore", "JSON", "Locks", "EmbeddedFiles",
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "API",
            dependencies: [
                "Models", "HTTPServer", "ModelObservation", "JSON", "Locks", "EmbeddedFiles",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "observable-server",
            dependencies: [
                "API",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "ModelObservationTests", dependencies: ["ModelObservation"]),
        .testTarget(name: "SQLiteStoreTests", dependencies: ["SQLiteStore"]),
        .testTarget(name: "EmbeddedFilesTests", dependencies: ["EmbeddedFiles"]),
        .testTarget(name: "ModelsTests", dependencies: ["Models", "SQLiteStore"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["API", "HTTPServer", "Models", "JSON", "SQLiteStore"]
        ),
    ]
)
