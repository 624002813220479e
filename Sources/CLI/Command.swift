import Foundation
import Notifications

/// One subcommand (of `stepo` or `stepo-bench`): its name, what it does, its usage, and how it runs.
public struct Command: Sendable {
    public let name: String
    public let summary: String
    public let usage: String
    public let details: String
    public let options: Set<String>
    public let flags: Set<String>
    /// The program its messages name before it ("stepo"), or "" for a program that is the command.
    public let program: String
    public let run: @Sendable (Arguments) throws -> Int32

    public init(name: String, summary: String, usage: String, details: String = "", options: Set<String> = [],
                flags: Set<String> = [], program: String = "stepo", run: @escaping @Sendable (Arguments) throws -> Int32) {
        self.name = name
        self.summary = summary
        self.usage = usage
        self.details = details
        self.options = options
        self.flags = flags
        self.program = program
        self.run = run
    }

    /// How its messages name it: "stepo ingest"; a program of one command gives no program.
    private var title: String { program.isEmpty ? name : program + " " + name }

    public var help: String {
        "usage: \(usage)\n\n\(summary)\n" + (details.isEmpty ? "" : "\n\(details)\n")
    }

    public func execute(_ words: [String]) -> Int32 {
        do {
            let arguments = try Arguments(words, options: options, flags: flags)
            if arguments.has("help") {
                Output.line(help)
                Output.flush()
                return 0
            }
            let status = try run(arguments)
            Output.flush()
            return status
        } catch let error as UsageError {
            Output.error("\(title): \(Command.visible(error.description))\nusage: \(usage)\n(see \(title) --help)")
            return 2
        } catch {
            // An error may quote what the user gave (a path, a URL) or what a library said of
            // it: its control characters are shown, never sent to the terminal.
            Output.error("\(title): \(Command.visible("\(error)"))")
            return 1
        }
    }

    /// `text` with its line breaks kept and every other control character made visible.
    public static func visible(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { Preview.visible($0.replacingOccurrences(of: "\t", with: "    ")) }.joined(separator: "\n")
    }
}
