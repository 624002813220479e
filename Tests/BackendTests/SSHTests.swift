import Foundation
import Testing
import TestSupport

/// The inbox the way a demo session reaches it: through a real OpenSSH server on 127.0.0.1,
/// with the pseudo-terminal, TERM and window size that ssh carries, in tmux.
@Suite("The inbox over SSH")
struct SSHTests {
    let folder = NSTemporaryDirectory() + "stepo-ssh-" + UUID().uuidString
    let sshd = "/usr/sbin/sshd"

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
        let tmux = try Tmux(folder: folder)
        let (server, port) = try startServer()
        defer { server.stop() }
        let user = String(cString: getpwuid(getuid())!.pointee.pw_name)
        let remote = tmux.inbox(term: nil)  // the TERM is the one ssh carries
        let ssh = "ssh -F /dev/null -t -i \(folder)/client -o IdentitiesOnly=yes -o StrictHostKeyChecking=no "
            + "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p \(port) \(user)@127.0.0.1 '\(remote)'; "
            + "echo ssh-ended; sleep 30"
        try tmux.start(ssh)
        defer { tmux.stop() }

        var text = try tmux.waitFor { $0.contains(" New") && $0.contains("synced") }
        #expect(text.contains("● Linh Trần and 2 others"))
        #expect(text.contains("● An Nguyễn Requested to follow you"))
        try tmux.keys("Space")
        text = try tmux.waitFor { $0.contains("▾") }
        #expect(text.contains("Kofi Asante Stepped with you: that light on the ridge!"))

        // The window size travels over SSH: smaller, too small, then back.
        // Shrinking crops the old screen at the top or the bottom; only a redraw for 60×16 has
        // the header on the first row and the footer on the last.
        let redrawn = { (screen: String) in
            let rows = screen.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
            return rows.first?.hasPrefix(" Activity") == true && rows.last?.contains("q quit") == true
        }
        try tmux.resize(width: 60, height: 16)
        text = try tmux.waitFor(redrawn)
        #expect(redrawn(text))
        let (small, restored) = try tmux.tooSmallAndBack()
        #expect(small.contains("Window too small"))
        #expect(restored.contains("● An Nguyễn Requested to follow you"))

        try tmux.keys("q")
        text = try tmux.waitFor { $0.contains("ssh-ended") }
        #expect(text.contains("ssh-ended"))
    }
}
