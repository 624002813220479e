import Foundation
import Notifications

/// A usage mistake: printed with the command's usage line, exit status 2.
public struct UsageError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// A failure the user should read: printed as `stepo: message`, exit status 1.
public struct CommandError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// The arguments of one subcommand: `--name value` options, `--flag` switches, positionals.
public struct Arguments: Sendable {
    public private(set) var options: [String: String] = [:]
    public private(set) var flags: Set<String> = []
    public private(set) var positionals: [String] = []

    /// Parses `words` knowing which options take a value and which are switches; anything
    /// else starting with `--` is an error naming it.
    public init(_ words: [String], options valued: Set<String>, flags known: Set<String>) throws {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            if word == "--" {
                positionals += words[index...]
                break
            }
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var inlineValue: String?
                if let equals = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if valued.contains(name) {
                    let value: String
                    if let inlineValue {
                        value = inlineValue
                    } else {
                        guard index < words.count else { throw UsageError(description: "--\(name) needs a value") }
                        value = words[index]
                        index += 1
                    }
                    // Which of two would a command take? Neither: a prune cannot be undone.
                    if let earlier = options[name], earlier != value {
                        throw UsageError(description: "--\(name) is given twice (\(Preview.visible(earlier)) and \(Preview.visible(value))): give it once")
                    }
                    options[name] = value
                } else if known.contains(name) || name == "help" {
                    flags.insert(name)
                } else {
                    throw UsageError(description: "unknown option --\(Preview.visible(name))")
                }
            } else if word == "-h" {
                flags.insert("help")
            } else {
                positionals.append(word)
            }
        }
    }

    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    public subscript(option: String) -> String? { options[option] }

    /// These arguments with `option` set to `value`.
    public func setting(_ option: String, to value: String) -> Arguments {
        var copy = self
        copy.options[option] = value
        return copy
    }

    public func integer(_ option: String) throws -> Int? {
        guard let text = options[option] else { return nil }
        guard let value = Int(text) else { throw UsageError(description: "--\(option) must be a whole number, not \(text)") }
        return value
    }
}

/// Writing to the standard streams, buffered for speed where output is large.
public enum Output {
    /// What waits to be written: commands write from their main thread only.
    nonisolated(unsafe) private static var buffer = ""

    public static func line(_ text: String) {
        buffer += text
        buffer += "\n"
        if buffer.utf8.count > 1 << 16 { flush() }
    }

    public static func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer.utf8))
        buffer = ""
    }

    public static func error(_ text: String) {
        flush()
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

extension CommandLine {
    /// The running executable's real path (from /proc, so `swift run` and symlinks resolve).
    public static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
    }
}
