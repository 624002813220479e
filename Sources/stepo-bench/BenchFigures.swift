import BenchSupport
import CLI
import Foundation
import SQLite

/// A bench's figures: each printed with its target, whether it was met, and the machine's
/// load average at that moment (a busy machine explains a slow figure).
struct BenchFigures {
    private(set) var missed = 0

    static var sqliteVersion: String { Database.libraryVersion }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    static func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
    }

    /// The sizes to run skewed workloads at: --scale (1 and 4 unless told).
    static func scales(_ arguments: Arguments) throws -> [Int] {
        try arguments["scale"].map { text in
            try text.split(separator: ",").map {
                guard let n = Int($0), n > 0 else { throw UsageError(description: "--scale takes whole numbers, e.g. 1,4") }
                return n
            }
        } ?? [1, 4]
    }

    /// --fraction: shrinks every workload for a quick look (the targets are for 1).
    static func fraction(_ arguments: Arguments) throws -> Double {
        try arguments["fraction"].map {
            guard let f = Double($0), f > 0, f <= 1 else { throw UsageError(description: "--fraction is a number in (0, 1]") }
            return f
        } ?? 1
    }

    /// The 1-minute load average, as `uptime` shows it.
    static var load: String {
        var loads = [Double](repeating: 0, count: 3)
        guard getloadavg(&loads, 3) > 0 else { return "load ?" }
        return String(format: "load %.2f", loads[0])
    }

    mutating func line(_ what: String, _ figure: String, met: Bool, target: String) {
        print("\(what): \(figure) — target \(target): \(met ? "met" : "MISSED") · \(BenchFigures.load)")
        fflush(nil)  // every C stream: print() writes through stdout
        if !met { missed += 1 }
    }

    mutating func report(_ what: String, seconds: Double, target: Double, ratio: (raw: Double, limit: Double)? = nil) {
        line(what, String(format: "%.3f s", seconds), met: seconds <= target, target: String(format: "≤ %.1f s", target))
        if let ratio {
            let times = seconds / max(ratio.raw, 1e-9)
            line("  a raw INSERT … SELECT of the same rows", String(format: "%.3f s; ratio %.2f×", ratio.raw, times),
                 met: times <= ratio.limit, target: String(format: "≤ %.0f×", ratio.limit))
        }
    }

    mutating func report(rate: Double, _ what: String, target: Double) {
        line(what, String(format: "%.0f events/s", rate), met: rate >= target, target: String(format: "≥ %.0f events/s", target))
    }

    mutating func report(counts times: [Double], _ what: String, target milliseconds: Double) {
        let median = BenchFigures.median(times) * 1000
        line(what, String(format: "%.4f ms median, %.4f ms p99", median, BenchFigures.percentile(times, 0.99) * 1000),
             met: median <= milliseconds, target: String(format: "≤ %.0f ms", milliseconds))
    }

    /// How a workload's time grew from its smallest size to its largest.
    mutating func growth(_ what: String, _ seconds: [Int: Double], limit: Double) {
        guard let small = seconds.keys.min(), let large = seconds.keys.max(), small != large,
              let a = seconds[small], let b = seconds[large] else { return }
        let expected = Double(large) / Double(small)
        let ratio = b / max(a, 1e-9)
        line("  \(what): ×\(large) took \(String(format: "%.2f", ratio))× the time of ×\(small)",
             String(format: "%.1f s → %.1f s", a, b), met: ratio <= limit * expected / 4,
             target: String(format: "≤ %.1f×", limit * expected / 4))
    }

    /// A result that is wrong, not slow: counted as a miss.
    mutating func fail(_ what: String) {
        print("\(what): WRONG")
        fflush(nil)  // every C stream: print() writes through stdout
        missed += 1
    }

    func finish() -> Int32 {
        print(missed == 0 ? "all targets met" : "\(missed) target(s) missed")
        return missed == 0 ? 0 : 1
    }
}
