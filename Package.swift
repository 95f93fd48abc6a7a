// swift-tools-version: 6.1
import PackageDescription

let package = Package(
  name: "Ferry",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Ferry", targets: ["Ferry"]),
    .executable(name: "ferry", targets: ["FerryCLI"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
  ],
  targets: [
    .systemLibrary(
      name: "CAvahi",
      pkgConfig: "avahi-client",
      providers: [.apt(["libavahi-client-dev"])]
    ),
    .target(
      name: "Ferry",
      dependencies: ["CAvahi"]
    ),
    .executableTarget(
      name: "FerryCLI",
      dependencies: [
        "Ferry",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    .executableTarget(
      name: "ferry-example-discover",
      dependencies: ["Ferry"],
      path: "Examples/DiscoverPeers"
    ),
    .testTarget(
      name: "FerryTests",
      dependencies: ["Ferry"]
    ),
    .testTarget(
      name: "FerryIntegrationTests",
      dependencies: ["Ferry"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
