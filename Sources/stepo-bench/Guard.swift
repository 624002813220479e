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
