import BenchSupport
import CLI
import Foundation
import Notifications

/// `stepo-bench standins --dir FOLDER [--port P] [--script Tests/Standins/standins.py]`: the push bench's
/// own HTTP/2 stand-in for APNs and FCM, as a process of its own (so its CPU is counted apart
/// from the worker's). The keys and certificate are made by the tests' stand-in script, so
/// both stand-ins check against the same kind of keys; it prints "listening on
/// https://127.0.0.1:PORT" once it is ready, and ends with the process that started it.
enum StandInCommand {
    /// The tests' stand-in script: under the current folder, or in the repository this
    /// binary was built in (it lives in .build/…/release).
    static var script: String {
        let relative = "Tests/Standins/standins.py"
        if FileManager.default.fileExists(atPath: relative) { return relative }
        var folder = URL(fileURLWithPath: CommandLine.executablePath).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            folder = folder.deletingLastPathComponent()
            let candidate = folder.appendingPathComponent(relative).path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        return relative
    }

    static func run(_ arguments: Arguments) throws -> Int32 {
        // The process that started this one, learnt first: read after the keys are made (a
        // second), a parent that left at once was already gone, and the stand-in stayed.
        let parent = getppid()
        guard let folder = arguments["dir"] else { throw UsageError(description: "standins needs --dir FOLDER") }
        let script = arguments["script"] ?? StandInCommand.script
        guard FileManager.default.fileExists(atPath: script) else {
            throw UsageError(description: "cannot find \(Preview.visible(script)), which makes the keys: run from the repository, or name it with --script FILE")
        }
        let port = try arguments["port"].map { text -> Int in
            guard let port = Int(text), (0...65535).contains(port) else { throw UsageError(description: "--port takes 0 to 65535") }
            return port
        } ?? 0
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw CommandError(description: "cannot make the folder \(folder): \((error as NSError).localizedDescription)")
        }
        guard access(folder, W_OK) == 0 else { throw CommandError(description: "cannot write in \(folder)") }
        let listener = try HTTP2StandInServer.listen(port: port)
        guard let python = DeliverBench.find("python3") else { throw CommandError(description: "python3 is not on PATH") }
        let keys = try Child.start([python, script, "--dir", folder, "--port", String(listener.port), "--keys-only"], log: folder + "/keys.log")
        guard keys.wait().status == 0 else {
            let output = String(decoding: FileManager.default.contents(atPath: folder + "/keys.log") ?? Data(), as: UTF8.self)
            throw CommandError(description: "the keys were not made by \(script): " + (output.isEmpty ? "it failed and said nothing" : output))
        }
        let server = try HTTP2StandInServer(folder: folder, listener: listener, standIn: try ProviderStandIn(folder: folder))
        // Gone with the process that started it, however that one ends (kill -9 included).
        Thread {
            while getppid() == parent { usleep(200_000) }
            exit(0)
        }.start()
        print("listening on https://127.0.0.1:\(server.port)")
        fflush(nil)
        server.serve()
    }
}
