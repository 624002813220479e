// swift-tools-version:6.0
import PackageDescription

// Arrows point down only: C libraries → SQLite; Notifications (the engine) → Wire (what the API
// carries) → Backend (the store) → API → Server; Wire → Replica → Inbox; all of them → stepo.
let package = Package(
    name: "stepo",
    products: [
        .executable(name: "stepo", targets: ["stepo"]),
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
        .target(name: "SQLite", dependencies: ["CSQLite"]),
        .target(name: "Notifications"),
        .target(name: "Wire", dependencies: ["Notifications"]),
        .target(name: "Backend", dependencies: ["SQLite", "Notifications", "Wire", "CCrypto"]),
        .target(name: "API", dependencies: ["Backend", "Notifications", "Wire"]),
        .target(name: "Server", dependencies: ["API", "Backend", "CMicroHTTPD"]),
        .target(name: "Replica", dependencies: ["Wire", "SQLite", "Notifications"]),
        .target(name: "Inbox", dependencies: ["Replica", "Notifications", "CNcursesw"]),
        .executableTarget(name: "stepo",
                          dependencies: ["Inbox", "Replica", "Server", "API", "Backend", "Wire", "Notifications", "SQLite", "CNcursesw", "CMicroHTTPD"]),
        // What the tests share: running the real binary, a tmux of their own.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite"]),
        .testTarget(name: "NotificationsTests", dependencies: ["Notifications"]),
        .testTarget(name: "BackendTests", dependencies: ["Backend", "Wire", "Notifications", "SQLite", "stepo", "TestSupport"]),
        .testTarget(name: "APITests", dependencies: ["API", "Backend", "Wire", "Notifications", "SQLite", "stepo"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "API", "Backend", "Wire", "Notifications", "stepo", "TestSupport"]),
        .testTarget(name: "InboxTests", dependencies: ["Inbox", "Replica", "Wire", "Notifications"]),
        .testTarget(name: "ReplicaTests", dependencies: ["Replica", "Server", "API", "Backend", "Wire", "Notifications", "SQLite", "TestSupport"]),
    ],
    swiftLanguageModes: [.v5]
)
