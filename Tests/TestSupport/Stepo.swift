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

extension Spawn.Result {
    public var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}
