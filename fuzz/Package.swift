// swift-tools-version:6.0
import PackageDescription

// A libFuzzer target over the request router and the JSON parser, kept out
// of the main package so `swift build` and `swift test` do not see it.
// Build and run it with `fuzz/run.sh`; it needs the main package's
// `ObservableServerCore` library product.
let package = Package(
    name: "observable-server-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "observable-server", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(name: "CFuzzerDriver"),
        .executableTarget(
            name: "RequestFuzzer",
            dependencies: [
                "CFuzzerDriver",
                .product(name: "ObservableServerCore", package: "observable-server"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
