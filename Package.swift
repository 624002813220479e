// swift-tools-version:6.0
import PackageDescription

// A release build carries the Swift runtime and Foundation inside the binary (compiled and
// linked with -static-stdlib): only the pages it uses are mapped, so the inbox starts in about
// 30 MB instead of 40 MB of shared libraries (docs/performance.md). Debug builds and the tests
// link them as shared libraries. Linking prints one line that is not this project's: glibc's
// warning about `mktemp`, used inside the static Foundation. The toolchain's lld would not print
// it, but its layout costs the inbox 1.7 MB more at its peak (29.6 → 31.4 MB), so gold stays.
let staticInRelease: [SwiftSetting] = [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]

// Arrows point down only: C libraries → SQLite, Postgres → Storage (the store's seam); Notifications (the engine) → Wire (what the API
// carries) → Backend (the store) → API → Server; Wire → Replica → Inbox; all of them → stepo.
let package = Package(
    name: "stepo",
    products: [
        .executable(name: "stepo", targets: ["stepo"]),
        .executable(name: "stepo-bench", targets: ["stepo-bench"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // No pkg-config here: ncursesw.pc's -D flags are refused by SwiftPM (with a warning on
        // every build), and the shim header defines what they would have.
        .systemLibrary(name: "CNcursesw", path: "Sources/CNcursesw", providers: [.apt(["libncursesw5-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // The push worker's HTTP/2 client: nghttp2 over OpenSSL's TLS (docs/delivery.md).
        .systemLibrary(name: "CHTTP2", path: "Sources/CHTTP2", pkgConfig: "libnghttp2",
                       providers: [.apt(["libnghttp2-dev", "libssl-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // The pseudo-terminal the benches run the inbox in (libc alone).
        .systemLibrary(name: "CPseudoTerminal", path: "Sources/CPseudoTerminal"),
        .target(name: "SQLite", dependencies: ["CSQLite"], swiftSettings: staticInRelease),
        .target(name: "Postgres", dependencies: ["CLibPQ"], swiftSettings: staticInRelease),
        // The seam between the backend's SQL and its two engines.
        .target(name: "Storage", dependencies: ["SQLite", "Postgres"], swiftSettings: staticInRelease),
        .target(name: "Notifications", swiftSettings: staticInRelease),
        .target(name: "Wire", dependencies: ["Notifications"], swiftSettings: staticInRelease),
        .target(name: "Backend", dependencies: ["Storage", "SQLite", "Postgres", "Notifications", "Wire", "CCrypto"], swiftSettings: staticInRelease),
        .target(name: "API", dependencies: ["Backend", "Storage", "Notifications", "Wire"], swiftSettings: staticInRelease),
        .target(name: "Server", dependencies: ["API", "Backend", "CMicroHTTPD"], swiftSettings: staticInRelease),
        .target(name: "HTTPClient", dependencies: ["CCurl", "CHTTP2"], swiftSettings: staticInRelease),
        .target(name: "Deliver", dependencies: ["Backend", "Notifications", "HTTPClient", "CCrypto"], swiftSettings: staticInRelease),
        .target(name: "Replica", dependencies: ["Wire", "SQLite", "Notifications", "HTTPClient"], swiftSettings: staticInRelease),
        .target(name: "Inbox", dependencies: ["Replica", "Notifications", "CNcursesw"], swiftSettings: staticInRelease),
        // Argument parsing, commands and output, shared by the two executables.
        .target(name: "CLI", dependencies: ["Notifications"], swiftSettings: staticInRelease),
        .executableTarget(name: "stepo",
                          dependencies: ["CLI", "Inbox", "Replica", "Server", "API", "Backend", "Deliver", "Wire", "Notifications", "SQLite", "HTTPClient", "CNcursesw", "CMicroHTTPD"],
                          swiftSettings: staticInRelease,
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // What the benches and the tests share and the product does not carry: bulk worlds, the
        // throwaway PostgreSQL cluster, the pseudo-terminal.
        .target(name: "BenchSupport", dependencies: ["Backend", "Storage", "SQLite", "Postgres", "Notifications", "Inbox", "CPseudoTerminal", "CHTTP2", "CCrypto", "HTTPClient"],
                swiftSettings: staticInRelease),
        // The benchmarks: they measure the `stepo` binary built beside them.
        .executableTarget(name: "stepo-bench",
                          dependencies: ["stepo", "CLI", "BenchSupport", "Backend", "Replica", "API", "Wire", "Notifications", "SQLite", "Postgres", "HTTPClient", "Storage", "CPseudoTerminal", "Deliver"],
                          swiftSettings: staticInRelease,
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // What the tests share: running the real binary, a tmux of their own.
        .target(name: "TestSupport", dependencies: ["Postgres", "BenchSupport"], path: "Tests/TestSupport"),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite"]),
        .testTarget(name: "NotificationsTests", dependencies: ["Notifications"]),
        .testTarget(name: "BackendTests", dependencies: ["BenchSupport", "Backend", "Wire", "Notifications", "SQLite", "Postgres", "Inbox", "stepo", "TestSupport", "HTTPClient"]),
        .testTarget(name: "APITests", dependencies: ["API", "Backend", "Wire", "Notifications", "SQLite", "stepo", "TestSupport"]),
        .testTarget(name: "ServerTests", dependencies: ["BenchSupport", "Server", "API", "Backend", "Deliver", "Wire", "Notifications", "stepo", "TestSupport", "HTTPClient", "Postgres"]),
        .testTarget(name: "InboxTests", dependencies: ["Inbox", "Replica", "Wire", "Notifications"]),
        .testTarget(name: "ReplicaTests", dependencies: ["BenchSupport", "Replica", "Inbox", "Server", "API", "Backend", "Wire", "Notifications", "SQLite", "TestSupport"]),
    ],
    // Every target, the tests too, in Swift 6 mode: complete concurrency checking.
    swiftLanguageModes: [.v6]
)
