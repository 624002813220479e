import BenchSupport
import Foundation
import Testing
import TestSupport

/// What the benches stand on and no other test runs: a pseudo-terminal of their own.
@Suite("The benches' pseudo-terminal")
struct BenchSupportTests {
    @Test("a pseudo-terminal opens at a size, runs the real binary in it, and reads what it writes")
    func runsTheBinary() throws {
        let terminal = try PseudoTerminal(rows: 24, columns: 80)
        let pid = try terminal.spawn([Stepo.binary, "--version"], environment: ["TERM": "xterm-256color", "LANG": "C.UTF-8"])
        defer { var status: Int32 = 0; waitpid(pid, &status, 0) }
        #expect(terminal.waitFor("stepo 0.1.0", timeout: 20) != nil)
        #expect(terminal.waitFor("SQLite", timeout: 5) != nil)
    }
}
