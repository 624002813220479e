import Foundation
import Notifications

/// A usage mistake: printed with the command's usage line, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
}

/// A failure the user should read: printed as `stepo: message`, exit status 1.
struct CommandError: Error, CustomStringConvertible {
    let description: String
}

/// The arguments of one subcommand: `--name value` options, `--flag` switches, positionals.
struct Arguments {
    private(set) var options: [String: String] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// Parses `words` knowing which options take a value and which are switches; anything
    /// else starting with `--` is an error naming it.
    init(_ words: [String], options valued: Set<String>, flags known: Set<String>) throws {
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
                    if let inlineValue {
                        options[name] = inlineValue
                    } else {
                        guard index < words.count else { throw UsageError(description: "--\(name) needs a value") }
                        options[name] = words[index]
                        index += 1
                    }
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

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    subscript(option: String) -> String? { options[option] }

    /// These arguments with `option` set to `value`.
    func setting(_ option: String, to value: String) -> Arguments {
        var copy = self
        copy.options[option] = value
        return copy
    }

    func integer(_ option: String) throws -> Int? {
        guard let text = options[option] else { return nil }
        guard let value = Int(text) else { throw UsageError(description: "--\(option) must be a whole number, not \(text)") }
        return value
    }
}

/// Writing to the standard streams, buffered for speed where output is large.
enum Output {
    nonisolated(unsafe) static var buffer = ""

    static func line(_ text: String) {
        buffer += text
        buffer += "\n"
        if buffer.utf8.count > 1 << 16 { flush() }
    }

    static func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer.utf8))
        buffer = ""
    }

    static func error(_ text: String) {
        flush()
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
