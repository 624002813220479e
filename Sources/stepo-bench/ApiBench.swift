import CLI
import Foundation
import HTTPClient

/// `stepo-bench api`: what a server's reads cost, beside a static server of the same bytes.
///
/// The sample world in an SQLite store, served by the real `stepo serve`; the demo user's
/// `GET /v1/activity?limit=50`, `GET /v1/counts` and the page again with `If-None-Match`
/// (answered 304 when nothing changed), each driven by wrk (Debian's C load generator: two
/// threads, 32 keep-alive connections, --seconds each). The floor, in the same run: nginx
/// (Debian's) serving the very bytes `stepo serve` answered, from files, with the same wrk.
/// Issue 35's targets: the page ≥ 0.15× nginx with p99 ≤ 20 ms, counts ≥ 0.6×, a 304 ≥ 0.5×.
struct ApiBench {
    let arguments: Arguments

    /// nginx, where Debian puts it; nil when it is not installed.
    static var nginx: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// What wrk measured against one URL.
    struct Load {
        var requests = 0.0
        var perSecond = 0.0
        var p50 = 0.0
        var p99 = 0.0
        var errors = 0
        /// Answers of 400 or above.
        var notOK = 0
        var cpu = 0.0
    }

    /// Prints requests, errors, answers of 400 and above, latency percentiles (ms).
    static let script = """
        -- stepo-bench api: one request, its headers from the command line (see ApiBench.swift).
        -- No response() callback: parsing every answer in Lua would make wrk cost more than nginx.
        function init(args)
          for i = 1, #args, 2 do wrk.headers[args[i]] = args[i + 1] end
        end
        function done(summary, latency, requests)
          local e = summary.errors
          io.write(string.format("stepo: requests %d seconds %.3f errors %d notok %d p50 %.3f p99 %.3f\\n",
            summary.requests, summary.duration / 1e6, e.connect + e.read + e.write + e.timeout, e.status,
            latency:percentile(50) / 1000, latency:percentile(99) / 1000))
        end
        """

    func run() throws -> Int32 {
        guard let wrk = WrkDriver.binary else { throw CommandError(description: "stepo-bench api needs wrk (apt-get install wrk)") }
        guard let nginx = ApiBench.nginx else { throw CommandError(description: "stepo-bench api needs nginx as its floor (apt-get install nginx)") }
        let seconds = try arguments.integer("seconds") ?? 8
        let connections = try arguments.integer("connections") ?? 32
        guard seconds > 0, connections > 0 else { throw UsageError(description: "--seconds and --connections must be positive") }
        let folder = arguments["dir"] ?? NSTemporaryDirectory() + "stepo-bench-api-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder + "/www", withIntermediateDirectories: true)
        defer { if ProcessInfo.processInfo.environment["STEPO_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: folder) } }
        print("stepo-bench api · \(ProcessInfo.processInfo.activeProcessorCount) cores · wrk -t2 -c\(connections), \(seconds) s a figure · the floor: nginx serving the same bytes")

        // The sample world, and a token for its demo user.
        let database = folder + "/store.db"
        guard let sample = ApiBench.sampleData() else {
            throw CommandError(description: "cannot find sample-data/events.ndjson; set STEPO_SAMPLE_DATA to its folder")
        }
        try ApiBench.check([Bench.stepo, "ingest", "--db", database, sample], log: folder + "/ingest.log")
        let token = try ApiBench.check([Bench.stepo, "token", "--db", database, "--user", "chaucao"], log: folder + "/token.log")
            .split(separator: "\n").last.map(String.init) ?? ""
        let server = try BenchWorld.serve(database, log: folder + "/serve.log")
        defer { server.child.stop() }
        // A second server on the same store keeping no pages: what writing each page costs.
        let fresh = try BenchWorld.serve(database, log: folder + "/serve-fresh.log", ["--page-cache", "0"])
        defer { fresh.child.stop() }

        // The answers as `stepo serve` gives them, kept for nginx to serve.
        let client = HTTPClient()
        let authorization = ("Authorization", "Bearer \(token)")
        let page = try client.perform(method: "GET", url: server.address + "/v1/activity?limit=50", headers: [authorization], timeout: 10)
        let counts = try client.perform(method: "GET", url: server.address + "/v1/counts", headers: [authorization], timeout: 10)
        guard page.status == 200, counts.status == 200 else {
            throw CommandError(description: "stepo serve answered \(page.status) and \(counts.status) to the demo user's reads")
        }
        try page.body.write(to: URL(fileURLWithPath: folder + "/www/activity.json"))
        try counts.body.write(to: URL(fileURLWithPath: folder + "/www/counts.json"))
        let etag = page.headers.first { $0.name.lowercased() == "etag" }?.value

        let port = try ApiBench.freePort()
        let floor = "http://127.0.0.1:\(port)"
        try """
            worker_processes auto;
            daemon off;
            user root;
            pid \(folder)/nginx.pid;
            error_log \(folder)/nginx-error.log;
            events { worker_connections 1024; }
            http {
              access_log off;
              etag on;
              default_type application/json;
              server {
                listen 127.0.0.1:\(port);
                root \(folder)/www;
                location = /v1/activity { try_files /activity.json =404; }
                location = /v1/counts { try_files /counts.json =404; }
              }
            }
            """.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
        let nginxChild = try Child.start([nginx, "-c", folder + "/nginx.conf", "-p", folder], log: folder + "/nginx.log")
        defer { nginxChild.stop() }
        try ApiBench.waitForPort(port)
        let floorTag = try client.perform(method: "GET", url: floor + "/v1/activity", timeout: 10)
            .headers.first { $0.name.lowercased() == "etag" }?.value

        let script = folder + "/api.lua"
        try ApiBench.script.write(toFile: script, atomically: true, encoding: .utf8)
        func drive(_ url: String, _ headers: [(String, String)], _ name: String) throws -> Load {
            let log = folder + "/wrk-\(name).log"
            let child = try Child.start([wrk, "-t2", "-c\(connections)", "-d\(seconds)s", "--timeout", "10s", "-s", script, url, "--"]
                                        + headers.flatMap { [$0.0, $0.1] }, log: log)
            let run = child.wait()
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard run.status == 0, let line = text.split(separator: "\n").first(where: { $0.hasPrefix("stepo: ") }) else {
                throw CommandError(description: "wrk failed (\(log)): \(text.suffix(400))")
            }
            var load = Load(cpu: run.cpu)
            let words = Array(line.split(separator: " ").dropFirst())
            for index in stride(from: 0, to: words.count - 1, by: 2) {
                let (key, value) = (String(words[index]), Double(words[index + 1]) ?? 0)
                switch key {
                case "requests": load.requests = value
                case "seconds": load.perSecond = load.requests / max(value, 1e-9)
                case "errors": load.errors = Int(value)
                case "p50": load.p50 = value
                case "p99": load.p99 = value
                case "notok": load.notOK = Int(value)
                default: break
                }
            }
            return load
        }

        var figures = BenchFigures()
        func report(_ what: String, stepo: Load, nginx: Load, least: Double, p99: Double? = nil) {
            let ratio = stepo.perSecond / max(nginx.perSecond, 1e-9)
            let wrong = stepo.notOK + stepo.errors
            print(String(format: "%@: stepo %.0f req/s (p50 %.2f ms, p99 %.2f ms), nginx %.0f req/s (p50 %.2f ms, p99 %.2f ms); wrk's CPU %.1f s and %.1f s of %d",
                         what, stepo.perSecond, stepo.p50, stepo.p99, nginx.perSecond, nginx.p50, nginx.p99, stepo.cpu, nginx.cpu, seconds * 2))
            figures.line("  \(what) against nginx", String(format: "%.3f×", ratio), met: ratio >= least && wrong == 0,
                         target: String(format: "≥ %.2f× (issue 35)", least) + (wrong > 0 ? ", and \(wrong) errors or answers ≥ 400" : ""))
            if let p99 {
                figures.line("  \(what): p99 at \(connections) connections", String(format: "%.2f ms", stepo.p99), met: stepo.p99 <= p99,
                             target: String(format: "≤ %.0f ms (issue 35)", p99))
            }
        }
        let activityURL = "/v1/activity?limit=50"
        let pageFloor = try drive(floor + "/v1/activity", [authorization], "page-nginx")
        report("GET \(activityURL) (\(page.body.count) bytes), the store unchanged: written once, then kept",
               stepo: try drive(server.address + activityURL, [authorization], "page"), nginx: pageFloor, least: 0.15, p99: 20)
        let written = try drive(fresh.address + activityURL, [authorization], "page-fresh")
        print(String(format: "  the same page written afresh for every request (stepo serve --page-cache 0): %.0f req/s, %.3f× nginx, p50 %.2f ms, p99 %.2f ms",
                     written.perSecond, written.perSecond / max(pageFloor.perSecond, 1e-9), written.p50, written.p99))
        report("GET /v1/counts (\(counts.body.count) bytes)",
               stepo: try drive(server.address + "/v1/counts", [authorization], "counts"),
               nginx: try drive(floor + "/v1/counts", [authorization], "counts-nginx"), least: 0.6)
        if let etag, let floorTag {
            // Each driven URL answers as expected once, before wrk counts it.
            let again = try client.perform(method: "GET", url: server.address + activityURL, headers: [authorization, ("If-None-Match", etag)], timeout: 10)
            guard again.status == 304 else { throw CommandError(description: "stepo serve answered \(again.status), not 304, to the page's own ETag") }
            report("the page again with If-None-Match (304)",
                   stepo: try drive(server.address + activityURL, [authorization, ("If-None-Match", etag)], "304"),
                   nginx: try drive(floor + "/v1/activity", [authorization, ("If-None-Match", floorTag)], "304-nginx"), least: 0.5)
        } else {
            figures.line("  the page again with If-None-Match", "stepo serve sent no ETag", met: false, target: "a 304 ≥ 0.5× nginx (issue 35)")
        }
        return figures.finish()
    }

    /// Runs a `stepo` command to its end; its standard output, or an error with its log.
    @discardableResult
    static func check(_ arguments: [String], log: String) throws -> String {
        let output = log + ".out"
        let run = try Child.start(arguments, log: log, output: output).wait()
        guard run.status == 0 else {
            throw CommandError(description: "\(arguments.dropFirst().prefix(1).joined()) failed: " + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
        }
        return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The sample stream: $STEPO_SAMPLE_DATA, else sample-data/ in a folder above this binary.
    static func sampleData() -> String? {
        if let explicit = ProcessInfo.processInfo.environment["STEPO_SAMPLE_DATA"] {
            return explicit.hasSuffix(".ndjson") ? explicit : explicit + "/events.ndjson"
        }
        var folder = URL(fileURLWithPath: CommandLine.executablePath).deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = folder.appendingPathComponent("sample-data/events.ndjson").path
            if FileManager.default.isReadableFile(atPath: candidate) { return candidate }
            folder.deleteLastPathComponent()
        }
        return nil
    }

    /// A port on 127.0.0.1 nothing listens on now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw CommandError(description: "cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits (at most 10 s) until something accepts connections on `port`.
    static func waitForPort(_ port: Int) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return }
            usleep(20_000)
        }
        throw CommandError(description: "nginx did not start on port \(port)")
    }
}
