import Foundation

/// Runs the real `stepo` binary built beside this test bundle.
public enum Stepo {
    public static var binary: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("stepo").path
    }

    public static func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
                           timeout: Double = 60) throws -> Spawn.Result {
        try Spawn.run([binary] + arguments, stdin: stdin, environment: environment, timeout: timeout)
    }
}

extension Stepo {
    /// The sample world's event stream, in the source tree.
    public static let sampleEvents = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("sample-data/events.ndjson").path

    /// `stepo serve` on `database` on a port the system chooses, its log in `log`: the running
    /// server and its address, once it listens.
    public static func serve(_ database: String, log: String, _ extra: [String] = []) throws -> (server: Spawn.Background, address: String) {
        let server = try Spawn.start([binary, "serve"] + TestEngine.storeArguments(database) + ["--port", "0", "--quiet"] + extra, log: log)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let text = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self)
            if let range = text.range(of: #"http://127\.0\.0\.1:\d+"#, options: .regularExpression) { return (server, String(text[range])) }
            usleep(20_000)
        }
        server.stop()
        throw Spawn.Failure(description: "stepo serve did not start: \(String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self))")
    }
}

extension Spawn.Result {
    public var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}
