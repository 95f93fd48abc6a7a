// swift-tools-version: 6.1
import PackageDescription

// scripts/fuzz builds the state-machine fuzzer with FERRY_FUZZ=1 (in .build-fuzz): Ferry and the
// fuzzer are then instrumented for libFuzzer's coverage and linked with its runtime (its path in
// FERRY_FUZZ_RUNTIME); in an ordinary build the fuzzer is a plain random driver.
let fuzzing = Context.environment["FERRY_FUZZ"] == "1"
let fuzzRuntime = Context.environment["FERRY_FUZZ_RUNTIME"] ?? ""
let instrumented: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer"])] : []

let package = Package(
  name: "Ferry",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Ferry", targets: ["Ferry"]),
    .library(name: "FerryMultipeer", targets: ["FerryMultipeer"]),
    .library(name: "FerryLocalSend", targets: ["FerryLocalSend"]),
    .library(name: "FerryAgent", targets: ["FerryAgent"]),
    .executable(name: "ferry", targets: ["FerryCLI"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
    .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
    // The daemon's control API: the runtime of the code swift-openapi-generator wrote from
    // docs/api/openapi.yaml (scripts/generate-api), and the HTTP types it speaks.
    .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
    .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
  ],
  targets: [
    .systemLibrary(
      name: "CAvahi",
      pkgConfig: "avahi-client",
      providers: [.apt(["libavahi-client-dev"])]
    ),
    // QR codes for `ferry receive --web`'s link, drawn in the terminal.
    .systemLibrary(
      name: "CQRencode",
      pkgConfig: "libqrencode",
      providers: [.apt(["libqrencode-dev"])]
    ),
    // Desktop notifications for `ferry daemon` (org.freedesktop.Notifications on the session
    // bus).
    .systemLibrary(
      name: "CDBus",
      pkgConfig: "dbus-1",
      providers: [.apt(["libdbus-1-dev"])]
    ),
    // Linux system calls the Glibc module does not export (renameat2, syncfs, sync_file_range).
    .target(name: "CFerrySystem"),
    // The wire protocol: frames, their codec, messages, errors and limits. Standard library
    // only, and nothing in it is public: applications see Ferry's own types.
    .target(name: "FerryWire", swiftSettings: instrumented),
    .target(
      name: "Ferry",
      dependencies: [
        "CAvahi",
        "CFerrySystem",
        "FerryWire",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOTLS", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "X509", package: "swift-certificates"),
        .product(name: "Crypto", package: "swift-crypto"),
        .product(name: "SwiftASN1", package: "swift-asn1"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: instrumented
    ),
    // MultipeerConnectivity's API over Ferry, so that an app ports by changing one import.
    .target(name: "FerryMultipeer", dependencies: ["Ferry"]),
    // LocalSend (protocol 2.2): the transfer core's second front end, its discovery and client.
    .target(
      name: "FerryLocalSend",
      dependencies: [
        "Ferry",
        "CFerrySystem",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "NIOTLS", package: "swift-nio"),
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      // The web pages' markup, script and style: files of their own (linted by scripts/test),
      // compiled into the binary.
      resources: [
        .embedInCode("Web/Assets/expired.html"),
        .embedInCode("Web/Assets/page.css"),
        .embedInCode("Web/Assets/receive.html"),
        .embedInCode("Web/Assets/receive.js"),
        .embedInCode("Web/Assets/share.html"),
        .embedInCode("Web/Assets/share.js"),
      ]
    ),
    // Receiving and sending for applications, over every protocol: one policy and consent
    // budget, one decider, one retry policy, one event stream (what the CLI and a daemon
    // share).
    .target(
      name: "FerryAgent",
      dependencies: [
        "Ferry",
        "FerryLocalSend",
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ]
    ),
    // The daemon's control API as docs/api/openapi.yaml describes it: types, server stubs and
    // a client, generated by scripts/generate-api and committed (no build runs the generator).
    .target(
      name: "FerryAPI",
      dependencies: [
        .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
      ],
      exclude: ["openapi-generator-config.yaml", "Generated/openapi.sha256"],
      resources: [.embedInCode("Generated/openapi.yaml")]
    ),
    // `ferry daemon`'s parts: the control API on a Unix socket, the event log, the outbox and
    // its courier, the history, questions waiting for a person, desktop notifications.
    .target(
      name: "FerryDaemon",
      dependencies: [
        "Ferry",
        "FerryAgent",
        "FerryLocalSend",
        "FerryAPI",
        "CDBus",
        "CFerrySystem",
        "CQRencode",
        .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ],
      resources: [
        .embedInCode("UI/Assets/icon.svg"),
        .embedInCode("UI/Assets/signed-out.html"),
        .embedInCode("UI/Assets/ui-format.js"),
        .embedInCode("UI/Assets/ui-upload.js"),
        .embedInCode("UI/Assets/ui.css"),
        .embedInCode("UI/Assets/ui.html"),
        .embedInCode("UI/Assets/ui.js"),
      ]
    ),
    .executableTarget(
      name: "FerryCLI",
      dependencies: [
        "Ferry",
        "FerryAgent",
        "FerryLocalSend",
        "FerryAPI",
        "FerryDaemon",
        .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Subprocess", package: "swift-subprocess"),
      ]
    ),
    .executableTarget(
      name: "ferry-example-discover",
      dependencies: ["Ferry"],
      path: "Examples/DiscoverPeers"
    ),
    .executableTarget(
      name: "ferry-example-chat",
      dependencies: ["Ferry"],
      path: "Examples/Chat"
    ),
    .executableTarget(
      name: "ferry-example-filedrop",
      dependencies: ["Ferry"],
      path: "Examples/FileDrop"
    ),
    .executableTarget(
      name: "ferry-example-stream",
      dependencies: ["Ferry"],
      path: "Examples/StreamPipe"
    ),
    .executableTarget(
      name: "ferry-example-batch",
      dependencies: ["Ferry"],
      path: "Examples/BatchSender"
    ),
    // The seed's file transfer written with FerryMultipeer as an iOS developer would: the
    // sender in Swift 5 language mode, the receiver in Swift 6, so that both modes build.
    .executableTarget(
      name: "ferry-example-mpc-send",
      dependencies: ["FerryMultipeer"],
      path: "Examples/MultipeerSender",
      swiftSettings: [.swiftLanguageMode(.v5)]
    ),
    .executableTarget(
      name: "ferry-example-mpc-receive",
      dependencies: ["FerryMultipeer"],
      path: "Examples/MultipeerReceiver"
    ),
    // FerryMultipeer's conformance apps: each a self-contained MultipeerConnectivity app in one
    // of the styles iOS apps are written in (docs/MULTIPEER.md), Swift 6 language mode, run
    // across namespace hosts by Tests/FerryIntegrationTests/MultipeerConformanceTests.
    .executableTarget(
      name: "mpc-conformance-stop-browsing",
      dependencies: ["FerryMultipeer"],
      path: "Conformance/Multipeer/StopBrowsing"
    ),
    .executableTarget(
      name: "mpc-conformance-lazy-session",
      dependencies: ["FerryMultipeer"],
      path: "Conformance/Multipeer/LazySession"
    ),
    .executableTarget(
      name: "mpc-conformance-late-delegates",
      dependencies: ["FerryMultipeer"],
      path: "Conformance/Multipeer/LateDelegates"
    ),
    .executableTarget(
      name: "mpc-conformance-any-thread",
      dependencies: ["FerryMultipeer"],
      path: "Conformance/Multipeer/AnyThread"
    ),
    .executableTarget(
      name: "mpc-conformance-runloop-streams",
      dependencies: ["FerryMultipeer"],
      path: "Conformance/Multipeer/RunLoopStreams"
    ),
    .executableTarget(
      name: "mpc-conformance-async",
      dependencies: ["FerryMultipeer"],
      path: "Conformance/Multipeer/AsyncAwait"
    ),
    .executableTarget(
      name: "ferry-state-fuzz",
      dependencies: [
        "Ferry",
        "FerryWire",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      path: "Fuzz/StateFuzz",
      swiftSettings: instrumented + (fuzzing ? [.define("FERRY_LIBFUZZER")] : []),
      linkerSettings: fuzzing ? [.unsafeFlags(["-Xlinker", fuzzRuntime, "-lstdc++"])] : []
    ),
    .executableTarget(
      name: "ferry-test-peer",
      dependencies: ["Ferry", "FerryWire"],
      path: "Tests/TestPeer"
    ),
    .executableTarget(
      name: "ferry-test-mpc-peer",
      dependencies: ["FerryMultipeer"],
      path: "Tests/TestMultipeerPeer"
    ),
    .testTarget(
      name: "FerryTests",
      dependencies: [
        "Ferry",
        "FerryWire",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
      ]
    ),
    .testTarget(
      name: "FerryCLITests",
      dependencies: ["FerryCLI", "FerryAgent", "FerryLocalSend"]
    ),
    .testTarget(
      name: "FerryAgentTests",
      dependencies: ["FerryAgent", "Ferry", "FerryLocalSend"]
    ),
    .testTarget(
      name: "FerryIntegrationTests",
      dependencies: ["Ferry", "FerryWire", "FerryMultipeer"]
    ),
    .testTarget(
      name: "FerryDaemonTests",
      dependencies: ["FerryDaemon", "FerryAPI", "FerryAgent", "Ferry"]
    ),
    .testTarget(
      name: "FerryLocalSendTests",
      dependencies: ["FerryLocalSend", "Ferry"]
    ),
    .testTarget(
      name: "FerryMultipeerTests",
      dependencies: ["FerryMultipeer", "Ferry"]
    ),
  ],
  swiftLanguageModes: [.v6]
)
