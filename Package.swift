// swift-tools-version:6.0
import PackageDescription

// Arrows point down only: C libraries → SQLite → Notifications (engine) → Backend → API → stepo.
let package = Package(
    name: "stepo",
    products: [
        .executable(name: "stepo", targets: ["stepo"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CNcursesw", path: "Sources/CNcursesw", pkgConfig: "ncursesw",
                       providers: [.apt(["libncursesw5-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .target(name: "SQLite", dependencies: ["CSQLite"]),
        .target(name: "Notifications"),
        .target(name: "Backend", dependencies: ["SQLite", "Notifications", "CCrypto"]),
        .target(name: "API", dependencies: ["Backend", "Notifications", "SQLite"]),
        .target(name: "Server", dependencies: ["API", "Backend", "CMicroHTTPD"]),
        .target(name: "Replica", dependencies: ["API", "SQLite", "Notifications"]),
        .target(name: "Inbox", dependencies: ["Replica", "Notifications", "CNcursesw"]),
        .executableTarget(name: "stepo",
                          dependencies: ["Inbox", "Replica", "Server", "API", "Backend", "Notifications", "SQLite", "CNcursesw", "CMicroHTTPD"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite"]),
        .testTarget(name: "NotificationsTests", dependencies: ["Notifications"]),
        .testTarget(name: "BackendTests", dependencies: ["Backend", "Notifications", "SQLite", "stepo"]),
        .testTarget(name: "APITests", dependencies: ["API", "Backend", "Notifications", "SQLite", "stepo"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "API", "Backend", "Notifications"]),
        .testTarget(name: "InboxTests", dependencies: ["Inbox", "Replica", "Notifications"]),
        .testTarget(name: "ReplicaTests", dependencies: ["Replica", "Server", "API", "Backend", "Notifications", "SQLite"]),
    ],
    swiftLanguageModes: [.v5]
)
