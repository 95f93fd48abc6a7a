// swift-tools-version: 6.1
// scripts/generate-api's own package: Apple's swift-openapi-generator, built apart from Ferry
// (.build-openapi), run by hand when docs/api/openapi.yaml changes. Ferry builds only the
// code it generated (Sources/FerryAPI/Generated) and its small runtime.
import PackageDescription

let package = Package(
  name: "ferry-openapi",
  dependencies: [
    .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3")
  ],
  targets: []
)
