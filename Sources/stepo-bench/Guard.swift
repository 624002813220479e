import CLI
import Foundation

/// CI's guards judge what the code costs, not what the machine had free: the CPU time (user
/// and system, every thread of this process) of the work and of its floor, taken in turns —
/// floor, work, floor, work — and compared as the median of the pairs' ratios. A core kept
/// busy by something else slows the wall clock of a pipeline of threads more than of one
/// thread; it moves the CPU either one spends far less. Wall-clock figures are printed beside.
enum Guard {
    /// Pairs each guard takes.
    static let pairs = 5

    /// One floor and one run of the work after it.
    struct Pair {
        var floorCPU: Double
        var workCPU: Double
        var floorWall: Double
        var workWall: Double

        /// The floor's CPU over the work's: higher is better, as a rate against the floor's is.
        var ratio: Double { floorCPU / max(workCPU, 1e-9) }
    }

    /// CPU seconds this process has spent so far, all its threads.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }

    /// The CPU time the calling thread has used, in seconds.
    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Runs `body` in this process: its result, its CPU seconds and its wall seconds.
    static func measure<T>(_ body: () throws -> T) rethrows -> (T, cpu: Double, wall: Double) {
        let cpu = processCPU(), start = DispatchTime.now()
        let result = try body()
        return (result, processCPU() - cpu, BenchFigures.seconds(since: start))
    }

    /// Waits, at most `limit` seconds, for the 1-minute load average to fall below one (the
    /// suites before a guard keep both cores busy), and says what it was.
    static func settle(limit: Double = 30) -> String {
        let start = Date()
        let before = oneMinuteLoad()
        var now = before
        while now >= 1, Date().timeIntervalSince(start) < limit {
            Thread.sleep(forTimeInterval: 1)
            now = oneMinuteLoad()
        }
        return String(format: "load %.2f at the start, %.2f after waiting %.0f s (at most %.0f)", before, now,
                      Date().timeIntervalSince(start), limit)
    }

    static func oneMinuteLoad() -> Double {
        var loads = [Double](repeating: 0, count: 3)
        return getloadavg(&loads, 3) > 0 ? loads[0] : 0
    }

    /// The median of the pairs' ratios, judged against `threshold`; every pair is printed when
    /// it fails, so a failure says whether it is the code (every pair low) or the machine (one
    /// pair apart from the rest).
    static func judge(_ taken: [Pair], _ what: String, threshold: Double, recorded: Double, _ figures: inout BenchFigures) {
        let ratios = taken.map(\.ratio)
        let median = BenchFigures.median(ratios)
        let wall = BenchFigures.median(taken.map { $0.floorWall / max($0.workWall, 1e-9) })
        figures.line(what, String(format: "CPU: floor ÷ work %.3f, median of %d pairs (%.3f–%.3f; recorded %.3f); wall clock %.3f",
                                  median, taken.count, ratios.min() ?? 0, ratios.max() ?? 0, recorded, wall),
                     met: median >= threshold, target: String(format: "≥ %.3f", threshold))
        if median < threshold {
            for (n, pair) in taken.enumerated() {
                print(String(format: "    pair %d: floor %.3f s CPU (%.3f s wall), work %.3f s CPU (%.3f s wall): ratio %.3f",
                             n + 1, pair.floorCPU, pair.floorWall, pair.workCPU, pair.workWall, pair.ratio))
            }
            let low = ratios.filter { $0 < threshold }.count
            print(low == ratios.count ? "    every pair is below the threshold: the code costs more than it did"
                                      : "    \(low) of \(ratios.count) pairs below the threshold: look at the machine too")
        }
    }
}

/// Instructions counted by valgrind (cachegrind without its cache simulation): what a program
/// executes in user space, the same from one run to the next whatever else the machine is
/// doing, where its CPU time moves by a third on a busy or slowed virtual machine. A guard that
/// must see a rise of a quarter judges these beside the CPU pairs (SQLite's own performance work
/// is measured this way). Time in the kernel is not counted: the CPU pairs still see it.
enum Instructions {
    static var valgrind: String? { DeliverBench.find("valgrind") }

    /// The words that run a program under valgrind, its count written to `log`.
    static func prefix(log: String) throws -> [String] {
        guard let valgrind else {
            throw CommandError(description: "valgrind is not installed (apt-get install valgrind): the guard counts instructions with it")
        }
        return [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", "--trace-syscalls=yes",
                "--log-file=" + log]
    }

    /// The system calls valgrind saw its program make, by name (one `SYSCALL[pid,tid](n) sys_name`
    /// line each in `log`; a call that may block has a second line for its answer, not counted
    /// again). `thread` (valgrind's numbering: 1 is the main thread) keeps one thread's alone.
    /// Waits and wake-ups between threads (futex, sched_yield, sleeps) and clock reads are left
    /// out: how often a thread waits follows the scheduler, not the code.
    static func systemCalls(_ log: String, thread: Int? = nil) throws -> SystemCalls {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { throw CommandError(description: "no valgrind log at \(log)") }
        var calls = SystemCalls()
        for line in text.split(separator: "\n") where line.hasPrefix("SYSCALL[") {
            guard let close = line.firstIndex(of: "]"), let name = line.split(separator: " ", maxSplits: 2).dropFirst().first,
                  name.hasPrefix("sys_") else { continue }
            if let thread, line[line.index(line.startIndex, offsetBy: 8)..<close].split(separator: ",").last.flatMap({ Int($0) }) != thread { continue }
            let call = String(name.dropFirst(4).prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            if SystemCalls.scheduling.contains(call) { continue }
            calls.byName[call, default: 0] += 1
        }
        return calls
    }

    /// System calls by name, and what a difference of two runs says when it is too many.
    struct SystemCalls {
        var byName: [String: Int] = [:]
        var total: Double { Double(byName.values.reduce(0, +)) }

        static let scheduling: Set<String> = ["futex", "sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime", "gettimeofday"]

        /// The calls `self` made beyond `fewer`, a unit each (`units` of them), most first.
        func beyond(_ fewer: SystemCalls, units: Double) -> String {
            byName.map { ($0.key, Double($0.value - (fewer.byName[$0.key] ?? 0)) / units) }
                .filter { abs($0.1) >= 0.005 }
                .sorted { $0.1 > $1.1 }
                .map { String(format: "%@ %.3f", $0.0, $0.1) }
                .joined(separator: ", ")
        }
    }

    /// The count valgrind wrote to `log` when its program exited ("I refs: 28,760,436").
    static func read(_ log: String) throws -> Double {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard let line = text.split(separator: "\n").last(where: { $0.contains("I") && $0.contains("refs:") }),
              let count = Double(line.split(separator: ":").last?.filter(\.isNumber) ?? "") else {
            throw CommandError(description: "valgrind wrote no instruction count to \(log): \(text.suffix(300))")
        }
        return count
    }

    /// One judge: the floor's instructions a unit over the work's, against `threshold`.
    static func judge(floor: Double, work: Double, _ what: String, threshold: Double, recorded: Double, _ figures: inout BenchFigures) {
        let ratio = floor / max(work, 1)
        figures.line(what, String(format: "instructions: floor %.0f a row ÷ work %.0f a push = %.3f (recorded %.3f)", floor, work, ratio, recorded),
                     met: ratio >= threshold, target: String(format: "≥ %.3f", threshold))
        if ratio < threshold { print(missedCounts) }
    }

    /// What a missed count means: counts do not move with the machine.
    static let missedCounts = """
            the counts are the same on a busy machine as on a quiet one: a miss is the code. Instructions
            are the work in user space (more parsing, copying, statements); system calls are the kernel's
            (more transactions, writes or reads a unit). Record the guard's figures again only for a change
            that is meant to cost more (docs/performance.md, "The guards").
        """
}
