import Foundation
import Notifications
import SQLite

/// Applies an NDJSON event stream to the store, line by line.
///
/// Each event is atomic (a savepoint); events are committed in batches for speed, and the
/// rows of a batch are reported only after it commits. A bad line is reported with its line
/// number and reason and skipped; the rest still apply.
public struct Ingestor {
    public struct Report: Sendable {
        public var applied = 0
        public var repeated = 0
        public var rejected = 0
        public var rows = 0
    }

    public let store: Store
    public var batchSize = 65536

    public init(store: Store) { self.store = store }

    /// - Parameters:
    ///   - onRow: called with every row created, in order, after its batch commits.
    ///   - onReject: called with the 1-based line number and the reason.
    public func ingest(_ reader: inout LineReader, onRow: (ActivityRow) throws -> Void,
                       onReject: (Int, String) -> Void) throws -> Report {
        var report = Report()
        var lineNumber = 0
        var done = false
        while !done {
            var outcomes: [EventOutcome] = []
            try store.db.transaction {
                while outcomes.count < batchSize {
                    guard let line = reader.next() else { done = true; return }
                    lineNumber += 1
                    switch line {
                    case .overlong(let bytes):
                        report.rejected += 1
                        onReject(lineNumber, "line is \(bytes) bytes, over the \(LineReader.defaultLimit)-byte limit")
                    case .text(let data):
                        do {
                            guard let outcome = try apply(data) else { continue }
                            if outcome.repeated { report.repeated += 1 } else { report.applied += 1 }
                            outcomes.append(outcome)
                        } catch let error as EventError {
                            report.rejected += 1
                            onReject(lineNumber, error.description)
                        } catch let error as SQLiteError where error.isConstraintViolation {
                            report.rejected += 1
                            onReject(lineNumber, "the store refused it: \(error.message)")
                        }
                    }
                }
            }
            for outcome in outcomes where outcome.rowCount > 0 {
                try store.forEachRow(ofEvent: outcome) { row in
                    report.rows += 1
                    try onRow(row)
                }
            }
        }
        return report
    }

    /// Parses and applies one line; nil for a blank line.
    public func apply(_ data: Data) throws -> EventOutcome? {
        guard let text = String(validatingUTF8: data) ?? nil else {
            throw EventError("line is not valid UTF-8")
        }
        if text.allSatisfy(\.isWhitespace) { return nil }
        let json: JSON
        do {
            json = try JSON.parse(data)
        } catch {
            throw EventError("malformed JSON")
        }
        let event = try Event(json: json)
        return try store.apply(event, payload: text)
    }
}

extension String {
    /// The string for `data` when it is valid UTF-8 holding no NUL byte, else nil.
    public init?(validatingUTF8 data: Data) {
        guard !data.contains(0), let text = String(validating: data, as: UTF8.self) else { return nil }
        self = text
    }
}
