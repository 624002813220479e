import CLI
import Foundation
import Notifications

/// The throughput workload driven by wrk, Debian's C load generator: one wrk process per
/// server, each one thread, keep-alive connections posting a heart or a comment each as fast as
/// they are answered (the same events `LoadDriver` posts in its closed loop, made by a Lua
/// script). A load generator written in Swift or Python took a core of the two itself; wrk takes
/// a few percent, printed beside the figure.
struct WrkDriver {
    let servers: [String]
    let admin: String
    let clients: Int
    let actors: Int
    let connections: Int
    let seconds: Int
    let folder: String

    /// wrk, where Debian puts it; nil when it is not installed.
    static var binary: String? {
        ["/usr/bin/wrk", "/usr/local/bin/wrk"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    struct Result {
        var posted = 0
        /// Answers that were not 2xx, and connections that failed.
        var errors = 0
        var kinds: [String: Int] = [:]
        /// Median and 99th percentile of a post's latency, in ms (the worst server's).
        var median = 0.0
        var p99 = 0.0
        /// CPU seconds the wrk processes spent, all of them.
        var cpu = 0.0
    }

    /// Event k: step 1 + k mod clients, person clients + 1 + k mod actors (the two counts share
    /// no factor, so each pair comes once); odd k a comment, even k a heart; at base + k ms.
    /// Process p, of n, posts k = p, p + n, p + 2n, …
    static let script = """
        -- stepo-bench scaleout: one heart or comment a POST (see WrkDriver.swift).
        local first, streams, clients, actors, admin, base
        local counter = 0
        function init(args)
          first = tonumber(args[1]); streams = tonumber(args[2]); clients = tonumber(args[3])
          actors = tonumber(args[4]); admin = args[5]; base = tonumber(args[6])
        end
        function request()
          local k = first + counter * streams
          counter = counter + 1
          local step = 1 + k % clients
          local actor = clients + 1 + k % actors
          local at = os.date("!%Y-%m-%dT%H:%M:%S", base + math.floor(k / 1000)) .. string.format(".%03dZ", k % 1000)
          local body
          if k % 2 == 1 then
            body = string.format('{"id":"c%d","type":"comment","at":"%s","actor":"u%d","step":"s%d","comment":{"id":"bc%d","text":"what a view"}}', k, at, actor, step, k)
          else
            body = string.format('{"id":"h%d","type":"heart","at":"%s","actor":"u%d","step":"s%d"}', k, at, actor, step)
          end
          return wrk.format("POST", "/v1/events", {["Authorization"] = "Bearer " .. admin}, body)
        end
        function done(summary, latency, requests)
          local e = summary.errors
          io.write(string.format("stepo: requests %d status %d connect %d read %d write %d timeout %d p50 %.3f p99 %.3f\\n",
            summary.requests, e.status, e.connect, e.read, e.write, e.timeout,
            latency:percentile(50) / 1000, latency:percentile(99) / 1000))
        end
        """

    func run() throws -> Result {
        guard let wrk = WrkDriver.binary else { throw CommandError(description: "wrk is not installed (apt-get install wrk)") }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let script = folder + "/post.lua"
        try WrkDriver.script.write(toFile: script, atomically: true, encoding: .utf8)
        let base = Timestamp.parse("2026-12-01T00:00:00Z")! / 1000
        var children: [(Child, String)] = []
        for (index, server) in servers.enumerated() {
            // The connections shared out: 16 over three servers is 6, 5 and 5.
            let share = connections / servers.count + (index < connections % servers.count ? 1 : 0)
            let log = folder + "/wrk-\(index).log"
            children.append((try Child.start([wrk, "-t1", "-c\(share)", "-d\(seconds)s", "--timeout", "10s", "-s", script, server, "--",
                                              "\(index)", "\(servers.count)", "\(clients)", "\(actors)", admin, "\(base)"], log: log), log))
        }
        var result = Result()
        for (child, log) in children {
            let run = child.wait()
            result.cpu += run.cpu
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard run.status == 0, let line = text.split(separator: "\n").first(where: { $0.hasPrefix("stepo: ") }) else {
                throw CommandError(description: "wrk failed (\(log)): \(text.suffix(400))")
            }
            var fields: [String: Double] = [:]
            let words = line.split(separator: " ").dropFirst()
            for (name, value) in zip(words.enumerated().filter { $0.offset % 2 == 0 }.map(\.element),
                                     words.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)) {
                fields[String(name)] = Double(value)
            }
            result.posted += Int(fields["requests"] ?? 0)
            for kind in ["status", "connect", "read", "write", "timeout"] {
                let count = Int(fields[kind] ?? 0)
                guard count > 0 else { continue }
                result.errors += count
                result.kinds[kind == "status" ? "answers not 2xx" : "\(kind) errors", default: 0] += count
            }
            result.median = max(result.median, fields["p50"] ?? 0)
            result.p99 = max(result.p99, fields["p99"] ?? 0)
        }
        return result
    }
}
