import Foundation
import Testing

/// The inbox the way a demo session reaches it: through a real OpenSSH server on 127.0.0.1,
/// with the pseudo-terminal, TERM and window size that ssh carries, in tmux.
@Suite("The inbox over SSH")
struct SSHTests {
    let folder = NSTemporaryDirectory() + "stepo-ssh-" + UUID().uuidString
    let sshd = "/usr/sbin/sshd"

    @discardableResult
    func tmux(_ arguments: String...) throws -> String {
        let result = try Spawn.run(["tmux", "-u", "-S", folder + "/tmux.sock"] + arguments, environment: ["LC_ALL": "C.UTF-8"])
        guard result.status == 0 else {
            throw Spawn.Failure(description: "tmux \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return result.stdout
    }

    func waitFor(_ condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(20)
        var text = try tmux("capture-pane", "-p", "-t", "ssh")
        while !condition(text) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
            text = try tmux("capture-pane", "-p", "-t", "ssh")
        }
        return text
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    func listening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// An sshd of this test's own: its host key, the one client key it accepts, a free port.
    func startServer() throws -> (Spawn.Background, port: Int) {
        for file in ["host", "client"] {
            let made = try Spawn.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "\(folder)/\(file)"])
            guard made.status == 0 else { throw Spawn.Failure(description: "ssh-keygen: \(made.stderr)") }
        }
        try FileManager.default.copyItem(atPath: folder + "/client.pub", toPath: folder + "/authorized_keys")
        if getuid() == 0 { try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true) }
        for attempt in 0..<5 {
            let port = Int.random(in: 20_000...60_000)
            let config = """
                Port \(port)
                ListenAddress 127.0.0.1
                HostKey \(folder)/host
                AuthorizedKeysFile \(folder)/authorized_keys
                StrictModes no
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                UsePAM no
                PermitRootLogin prohibit-password
                PidFile none
                """
            try config.write(toFile: folder + "/sshd_config", atomically: true, encoding: .utf8)
            let server = try Spawn.start([sshd, "-D", "-e", "-f", folder + "/sshd_config"], log: folder + "/sshd-\(attempt).log")
            let deadline = Date().addingTimeInterval(5)
            while server.isRunning && !listening(port) && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if server.isRunning && listening(port) { return (server, port) }
            server.stop()
        }
        let log = (try? String(contentsOfFile: folder + "/sshd-4.log", encoding: .utf8)) ?? ""
        throw Spawn.Failure(description: "sshd did not start: \(log)")
    }

    @Test("over SSH the inbox opens, takes keys, redraws on a resize, and quits back to the shell")
    func inboxOverSSH() throws {
        guard FileManager.default.isExecutableFile(atPath: sshd) else {
            Issue.record("\(sshd) is missing: `bash .ci/deps` installs openssh-server")
            return
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let (server, port) = try startServer()
        defer { server.stop() }
        let user = String(cString: getpwuid(getuid())!.pointee.pw_name)
        let remote = "env LC_ALL=C.UTF-8 XDG_DATA_HOME=\(folder)/data XDG_STATE_HOME=\(folder)/state \(Stepo.binary)"
        let ssh = "ssh -F /dev/null -t -i \(folder)/client -o IdentitiesOnly=yes -o StrictHostKeyChecking=no "
            + "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p \(port) \(user)@127.0.0.1 '\(remote)'; "
            + "echo ssh-ended; sleep 30"
        try tmux("new-session", "-d", "-s", "ssh", "-x", "100", "-y", "30", ssh)
        defer { _ = try? tmux("kill-server") }

        var text = try waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains("● Linh Trần and 1 other"))
        #expect(text.contains("● An Nguyễn Requested to follow you"))
        try tmux("send-keys", "-t", "ssh", "Space")
        text = try waitFor { $0.contains("▾") }
        #expect(text.contains("Maya Okonkwo Stepped with you by heart"))

        // The window size travels over SSH: smaller, too small, then back.
        try tmux("resize-window", "-t", "ssh", "-x", "60", "-y", "16")
        text = try waitFor { $0.split(separator: "\n").first?.contains("Activity") == true && $0.contains("q quit") }
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 60 })
        #expect(text.contains("q quit"))
        try tmux("resize-window", "-t", "ssh", "-x", "30", "-y", "8")
        text = try waitFor { $0.contains("Window too small") }
        #expect(text.contains("Window too small"))
        try tmux("resize-window", "-t", "ssh", "-x", "100", "-y", "30")
        text = try waitFor { $0.contains(" New") }
        #expect(text.contains("● An Nguyễn Requested to follow you"))

        try tmux("send-keys", "-t", "ssh", "q")
        text = try waitFor { $0.contains("ssh-ended") }
        #expect(text.contains("ssh-ended"))
    }
}
