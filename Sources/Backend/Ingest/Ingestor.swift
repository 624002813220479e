import Dispatch
import Foundation
import Notifications
import Wire
import Storage
import class SQLite.Checkpointer

/// Applies an NDJSON event stream to the store, line by line.
///
/// Three stages on the machine's cores: a reader thread splits, validates and parses lines;
/// the calling thread applies the events (each atomic, in a savepoint) and commits them in
/// batches; a serial output stage reports each batch's rows and rejected lines, in line
/// order, once the batch has committed. A bad line is reported with its line number and
/// reason and skipped; the rest still apply.
public struct Ingestor {
    /// The write-ahead log's bound while ingesting: every page read searches the log's index,
    /// one table per 4,096 frames, so a short log keeps a long ingest as fast as its start.
    public static let largestLog = 16 << 20

    /// The page cache `stepo ingest` gives its SQLite connection (`Store.limitMemory`). A
    /// million-event ingest took 109.7 s with 16 MB, 107.0 with 32 and 98.1 with 64 (2026-12-07,
    /// 32,768 events a transaction); 24 keeps its peak under 80 MB with the rest of the process.
    public static let pageCacheKiB = 24_576

    public struct Report: Sendable {
        public var applied = 0
        public var repeated = 0
        public var rejected = 0
        public var rows = 0
        /// Lines that were a change of an existing batch row (a member joined), not a new row.
        public var batchChanges = 0

        public init() {}

        mutating func add(_ batch: Batch) {
            applied += batch.applied
            repeated += batch.repeated
            rejected += batch.rejected
        }
    }

    public let store: Store
    /// Events per transaction at most; a batch also commits whenever the input runs dry, so
    /// a live stream's rows appear promptly. A batch's lines and rows are held until it
    /// commits, so this bounds the ingest's memory: on PostgreSQL 32,768 of them took a
    /// 250,000-event ingest to 147 MB, and 4,096 cost nothing measurable (a commit there is one
    /// round trip among thousands). On SQLite a commit writes the hot pages again (the inboxes,
    /// the counters): 4,096 cost a fifth of the rate, 8,192 nothing we could measure against
    /// 32,768, whose lines, outcomes and rows were 25 MB of a million-event ingest's peak.
    public var batchSize: Int

    public init(store: Store) {
        self.store = store
        batchSize = store.dialect.writersSideBySide ? 4_096 : 8_192
    }

    /// Applies every chunk under a savepoint of its own, as the ingest did before 2026-12-03
    /// (three fifths of its time): the known regression CI's guard is shown to catch
    /// (`stepo-bench engine --guard --regress savepoints`). Never set by the product.
    @_spi(Bench) public var savepointEveryChunk = false

    /// Whether hearts, shares and comments are decided set at a time (`EventSet`); off, every
    /// event takes the one-event path, as the differential tests and the bench compare.
    @_spi(Bench) public var setAtATime = true

    /// Runs of fewer hearts, shares and comments than this take the one-event path: a set's
    /// dozen gathers cost more than they save for one event (through the servers, 25
    /// statements an event against 17). Both paths are held equal by the differential tests,
    /// which set it to 1.
    @_spi(Bench) public var smallestSet = 8

    /// Lines the reader hands over at most at once: the largest run decided together.
    @_spi(Bench) public var chunkLines = 1024

    /// Every batch waits until it is full (or the input ends) before it commits, and no
    /// checkpoint runs: what the applying thread asks of the kernel is then the same in every
    /// run, however the threads were scheduled, so CI's guard can count its system calls and
    /// judge a rise of a fifth. The product commits whenever the input runs dry and
    /// checkpoints beside the writer, both of which follow the clock. Never set by the product.
    @_spi(Bench) public var countable = false

    /// One line after parsing: an event to apply, or the reason it was rejected.
    enum Parsed: Sendable {
        case event(Event)
        case rejected(String)
    }

    /// What the output stage reports, in line order.
    enum Item {
        case outcome(EventOutcome)
        case rejected(line: Int, reason: String)
    }

    /// - Parameters:
    ///   - onRow: called with every row created, in order, after its batch commits.
    ///   - onReject: called with the 1-based line number and the reason.
    ///   - onBatch: called after each committed batch has been reported (to flush output).
    ///   All three are called on one serial output thread, never at the same time, and all
    ///   calls have been made when `ingest` returns.
    public func ingest(_ reader: LineReader, onRow: @escaping (ActivityRow) throws -> Void,
                       onReject: @escaping (Int, String) -> Void,
                       onBatch: @escaping () -> Void = {}) throws -> Report {
        // Chunks parsed ahead of the store: enough to keep it busy, few enough to hold little
        // memory when the store is the slow stage.
        let parsed = BlockingQueue<[(Int, Parsed)]>(capacity: 8)
        let lines = chunkLines
        let parser = Thread { Ingestor.parse(reader, into: parsed, chunkLines: lines) }
        parser.stackSize = 1 << 20
        parser.start()
        defer { parsed.close() }  // on an error, stop the reader

        let db = store.db
        let output = OutputStage(open: { try db.another(readOnly: true) }, onRow: onRow, onReject: onReject, onBatch: onBatch)
        // On SQLite, checkpoints copy the log into the database file: that I/O moves off this
        // thread, which is the pipeline's slowest stage, to a connection of its own on the other
        // core. (PostgreSQL checkpoints on its own.)
        // (A countable run checkpoints only at its end.)
        let onSQLite = db.makeCheckpointer()
        let checkpointer = countable ? nil : onSQLite
        if onSQLite != nil { try db.execute("PRAGMA wal_autocheckpoint = 0") }
        defer {
            checkpointer?.finish()
            if onSQLite != nil { try? db.execute("PRAGMA wal_autocheckpoint = \(Checkpointer.defaultAutocheckpoint)") }
        }
        var report = Report()
        do {
            while let first = parsed.take() {
                // The batch's chunks are kept until it commits: a batch PostgreSQL aborted to
                // break a deadlock is applied again whole.
                var chunks = [first]
                var batch: Batch
                var tries = 0
                while true {
                    do {
                        batch = try applyBatch(&chunks, polling: parsed)
                        break
                    } catch where Ingestor.isTransient(error) && tries < Ingestor.retries {
                        tries += 1
                        store.forgetLookups()
                        usleep(useconds_t(1_000 * tries * tries))
                    } catch var failure as LineFailure {
                        // The store failed at one line: its batch rolled back. What came before
                        // that line is applied again and kept, if the store takes it now; the
                        // run stops there, saying truly how far it is stored.
                        store.forgetLookups()
                        let batchStart = chunks.first?.first?.0 ?? failure.line
                        var before = chunks.map { $0.filter { $0.0 < failure.line } }.filter { !$0.isEmpty }
                        if before.isEmpty {
                            failure.storedThrough = batchStart - 1
                        } else if let done = try? applyBatch(&before, polling: nil) {
                            report.add(done)
                            if !done.items.isEmpty { output.report(done.items) }
                            failure.storedThrough = failure.line - 1
                        } else {
                            store.forgetLookups()
                            failure.storedThrough = batchStart - 1
                        }
                        throw failure
                    } catch where Connection.fault(of: error) != nil {
                        // The batch failed as a whole (a full disk is often met at COMMIT, where
                        // the pages are written): apply it again a line per transaction, keeping
                        // each, to find the line the store cannot take.
                        store.forgetLookups()
                        batch = try applyLineByLine(chunks, output: output, report: &report)
                        break
                    }
                }
                report.add(batch)
                // The background checkpoints copy pages but cannot let the log restart while
                // this thread keeps committing; past its bound, empty it here (a reader of the
                // output stage may hold it a moment: then the next batch tries again).
                if let checkpointer { db.boundLog(with: checkpointer, largest: Ingestor.largestLog) }
                if !batch.items.isEmpty { output.report(batch.items) }
            }
        } catch {
            _ = try? output.finish()
            throw error
        }
        (report.rows, report.batchChanges) = try output.finish()
        return report
    }

    /// Applies each line of `chunks` in a transaction of its own, reporting as it goes: after a
    /// batch failed on a fault of the store, what can still be kept is kept, and the first line
    /// the store cannot take stops the ingest as a `LineFailure`.
    private func applyLineByLine(_ chunks: [[(Int, Parsed)]], output: OutputStage, report: inout Report) throws -> Batch {
        for entry in chunks.joined() {
            var one = [[entry]]
            let done: Batch
            do {
                done = try applyBatch(&one, polling: nil)
            } catch var failure as LineFailure {
                failure.storedThrough = entry.0 - 1
                throw failure
            } catch {
                throw LineFailure(line: entry.0, underlying: error, storedThrough: entry.0 - 1)
            }
            report.add(done)
            if !done.items.isEmpty { output.report(done.items) }
        }
        return Batch()
    }

    /// Times a batch is tried again after PostgreSQL aborted it (a deadlock, a serialization
    /// failure) before the ingest gives up.
    public static let retries = 8

    /// What one committed batch did: its outcomes to report, and its counts.
    struct Batch {
        var items: [Item] = []
        var applied = 0
        var repeated = 0
        var rejected = 0
    }

    /// Applies `chunks` in one transaction, then (with `polling`) more chunks while the batch
    /// is not full and more are waiting, appending them to `chunks`.
    ///
    /// Events are first applied with no savepoint under them: a savepoint makes SQLite copy
    /// every page it changes into its statement journal and walk that journal again at each
    /// statement's end, and a savepoint per chunk took three fifths of an ingest's time. If an
    /// event fails, the whole batch rolls back and is applied again with a savepoint per
    /// chunk (see `applyChunk`), so a bad line still costs only itself; the next batch starts
    /// fast again.
    private func applyBatch(_ chunks: inout [[(Int, Parsed)]], polling queue: BlockingQueue<[(Int, Parsed)]>?) throws -> Batch {
        if savepointEveryChunk { return try applyBatch(&chunks, polling: queue, guarded: true) }
        do {
            return try applyBatch(&chunks, polling: queue, guarded: false)
        } catch is UnguardedFailure {
            store.forgetLookups()
            return try applyBatch(&chunks, polling: queue, guarded: true)
        }
    }

    /// An event failed where no savepoint could take it back alone: its batch rolls back.
    private struct UnguardedFailure: Error {}

    private func applyBatch(_ chunks: inout [[(Int, Parsed)]], polling queue: BlockingQueue<[(Int, Parsed)]>?,
                            guarded: Bool) throws -> Batch {
        var batch = Batch()
        var events = 0
        // Hearts, shares and comments of consecutive chunks are one set: a chunk's writes go to
        // the store while the next chunk is decided.
        let set = EventSet(store: store)
        try store.db.transaction { try store.withInteractionCache {
            var index = 0
            while true {
                if index == chunks.count {
                    // Commit when the batch is full, or when nothing more is waiting.
                    guard events < batchSize, let next = countable ? queue?.take() : queue?.poll() else { break }
                    chunks.append(next)  // kept at once: a batch tried again applies it too
                }
                for (line, result) in try (guarded ? applyChunk(chunks[index]) : applyUnguarded(chunks[index], set: set)) {
                    switch result {
                    case .success(let outcome):
                        events += 1
                        if outcome.repeated { batch.repeated += 1 } else { batch.applied += 1 }
                        if outcome.rowCount > 0 || !outcome.writtenRows.isEmpty { batch.items.append(.outcome(outcome)) }
                    case .failure(let refusal):
                        batch.rejected += 1
                        batch.items.append(.rejected(line: line, reason: refusal.reason))
                    }
                }
                index += 1
                // On SQLite the set forgets its facts after each chunk: the store holds them all
                // once written, and the next chunk's gather reads them back. Kept for a whole
                // batch, they grew with it (40 MB of a 32,768-event batch) and were slower to
                // search. On PostgreSQL a chunk's writes travel while the next chunk is decided,
                // so the set runs on across chunks.
                if !store.dialect.writersSideBySide { try set.finish() }
            }
            try set.finish()
        } }
        return batch
    }

    /// Whether `error` is PostgreSQL giving up a transaction that may succeed when tried again:
    /// a deadlock it broke (40P01) or a serialization failure (40001).
    static func isTransient(_ error: Error) -> Bool {
        if let failure = error as? LineFailure { return isTransient(failure.underlying) }
        return Connection.isTransient(error)
    }

    /// Why a line was refused.
    struct Refusal: Error {
        let reason: String
    }

    /// `chunk` with every event older than what the store keeps refused (`Store.prune`): its
    /// id may have been forgotten, and applying it could repeat what was applied long ago.
    /// Read once a chunk, in the chunk's transaction.
    private func screened(_ chunk: [(Int, Parsed)]) throws -> [(Int, Parsed)] {
        try store.refreshKeptSince()
        guard store.keptSinceNow != nil else { return chunk }
        return chunk.map { line, entry in
            if case .event(let event) = entry, let refusal = store.prunedRefusal(event) { return (line, .rejected(refusal)) }
            return (line, entry)
        }
    }

    /// Applies a chunk of parsed lines with no savepoint: an event that fails (not transiently)
    /// throws `UnguardedFailure`, and its batch is applied again guarded.
    private func applyUnguarded(_ chunk: [(Int, Parsed)], set: EventSet) throws -> [(Int, Result<EventOutcome, Refusal>)] {
        do {
            return try applyWhole(try screened(chunk), set: set)
        } catch where !Ingestor.isTransient(error) {
            throw UnguardedFailure()
        }
    }

    /// Applies every event of `chunk` with no savepoint of its own; the first failure throws.
    /// Hearts, shares and comments go set at a time (`EventSet`), a run of them between the
    /// events of other types; the rest one at a time.
    /// The set goes on into the next chunk; it is finished before an event of another type
    /// (which reads the store) and by the caller before the transaction ends.
    private func applyWhole(_ chunk: [(Int, Parsed)], set: EventSet) throws -> [(Int, Result<EventOutcome, Refusal>)] {
        var results: [(Int, Result<EventOutcome, Refusal>)] = []
        results.reserveCapacity(chunk.count)
        var run: [(Int, Event)] = []
        func flush() throws {
            guard !run.isEmpty else { return }
            if run.count < smallestSet && set.isIdle {
                // Too few to pay for the gathers: one at a time, as any other event.
                for (line, event) in run { results.append((line, .success(try store.apply(event, atomically: false)))) }
            } else {
                results += try set.apply(run)
            }
            run.removeAll(keepingCapacity: true)
        }
        for (line, entry) in chunk {
            switch entry {
            case .rejected(let reason):
                results.append((line, .failure(Refusal(reason: reason))))
            case .event(let event) where setAtATime && EventSet.takes(event):
                run.append((line, event))
            case .event(let event):
                try flush()
                try set.finish()
                results.append((line, .success(try store.apply(event, atomically: false))))
            }
        }
        try flush()
        return results.sorted { $0.0 < $1.0 }
    }

    /// Applies a chunk of parsed lines under one savepoint. If any event fails, the chunk is
    /// rolled back and applied again one event at a time, each under its own savepoint, so a
    /// bad line costs only itself. A failure of the store itself at one line (a full disk, a
    /// lost connection) stops the ingest there as a `LineFailure`; a transient one (see
    /// `isTransient`) aborts the batch, to be tried again.
    func applyChunk(_ chunk: [(Int, Parsed)]) throws -> [(Int, Result<EventOutcome, Refusal>)] {
        let chunk = try screened(chunk)
        do {
            return try store.db.transaction {
                let set = EventSet(store: store)
                let results = try applyWhole(chunk, set: set)
                try set.finish()
                return results
            }
        } catch where !Ingestor.isTransient(error) {
            // Some event failed: the whole chunk rolled back. Apply it again, one by one.
            store.forgetLookups()
        }
        // Hearts, shares and comments still go set at a time (a line the rules refuse there
        // writes nothing); each other event under a savepoint of its own.
        var results: [(Int, Result<EventOutcome, Refusal>)] = []
        var run: [(Int, Event)] = []
        func single(_ line: Int, _ event: Event) throws {
            do {
                results.append((line, .success(try store.apply(event))))
            } catch {
                store.forgetLookups()
                if let refusal = Ingestor.refusal(error) {
                    results.append((line, .failure(refusal)))
                    return
                }
                if Ingestor.isTransient(error) { throw error }
                throw LineFailure(line: line, underlying: error)
            }
        }
        func flush() throws {
            guard !run.isEmpty else { return }
            if run.count < smallestSet {
                let events = run
                run.removeAll(keepingCapacity: true)
                for (line, event) in events { try single(line, event) }
                return
            }
            do {
                results += try store.db.transaction {
                    let set = EventSet(store: store)
                    let decided = try set.apply(run)
                    try set.finish()
                    return decided
                }
            } catch {
                store.forgetLookups()
                if Ingestor.isTransient(error) { throw error }
                throw LineFailure(line: run[0].0, underlying: error)
            }
            run.removeAll(keepingCapacity: true)
        }
        for (line, entry) in chunk {
            switch entry {
            case .rejected(let reason):
                try flush()
                results.append((line, .failure(Refusal(reason: reason))))
            case .event(let event) where setAtATime && EventSet.takes(event):
                run.append((line, event))
            case .event(let event):
                try flush()
                try single(line, event)
            }
        }
        try flush()
        return results.sorted { $0.0 < $1.0 }
    }

    /// The store failed while applying one line (not the line's fault): the ingest stops
    /// there, having kept every line before it.
    public struct LineFailure: Error, CustomStringConvertible {
        public let line: Int
        public let underlying: Error
        /// Every line up to this one was applied (or refused and reported); none after it was.
        public var storedThrough: Int

        init(line: Int, underlying: Error, storedThrough: Int? = nil) {
            self.line = line
            self.underlying = underlying
            self.storedThrough = storedThrough ?? line - 1
        }

        public var description: String { "line \(line): \(reason)" }
        /// What happened and what to do, without the line.
        public var reason: String {
            let kept = storedThrough == line - 1 ? "the lines before it are stored"
                : storedThrough <= 0 ? "no line of this run is stored"
                : "lines 1–\(storedThrough) are stored"
            return "the store failed: \(Connection.message(of: underlying)) — \(kept), it and the rest are not; "
                + "run it again once the store is back (applied events are skipped)"
        }
    }

    /// The refusal an error stands for — bad input, or a constraint the store upholds — or nil
    /// for a failure of the store itself (which stops the ingest).
    static func refusal(_ error: Error) -> Refusal? {
        if let error = error as? EventError { return Refusal(reason: error.description) }
        if Connection.isConstraintViolation(error) {
            return Refusal(reason: "the store refused it: \(Connection.message(of: error))")
        }
        return nil
    }

    /// The reader stage: lines to parsed events, in chunks, until the input ends or the
    /// queue is closed.
    static func parse(_ source: LineReader, into queue: BlockingQueue<[(Int, Parsed)]>, chunkLines: Int = 1024) {
        var reader = source
        var number = 0
        var chunk: [(Int, Parsed)] = []
        chunk.reserveCapacity(chunkLines)
        while let line = reader.next() {
            number += 1
            switch line {
            case .overlong(let bytes):
                chunk.append((number, .rejected("line is \(bytes) bytes, over the \(LineReader.defaultLimit)-byte limit")))
            case .text(let data):
                do {
                    if let event = try parseLine(data) { chunk.append((number, .event(event))) }
                } catch let error as EventError {
                    chunk.append((number, .rejected(error.description)))
                } catch {
                    chunk.append((number, .rejected("\(error)")))
                }
            }
            // Hand over a full chunk, or whatever we have before waiting on the input: a live
            // stream's lines must not sit here until more arrive.
            if chunk.count >= chunkLines || (!chunk.isEmpty && !reader.hasBufferedLine) {
                guard queue.put(chunk) else { return }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if !chunk.isEmpty { _ = queue.put(chunk) }
        queue.close()
    }

    /// One line to its event; nil for a blank line.
    ///
    /// The JSON reader refuses invalid UTF-8, NUL and other controls itself, so the line is not
    /// walked first; only a refused line is looked at again, to say why in plain words.
    public static func parseLine(_ data: Data) throws -> Event? {
        let blank = data.withUnsafeBytes { bytes in bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }
        if blank { return nil }
        let json: JSON
        do {
            json = try JSON.parse(data)
        } catch {
            if String(validatingUTF8: data) == nil { throw EventError("line is not valid UTF-8") }
            throw EventError("malformed JSON")
        }
        return try Event(json: json)
    }

    /// The lines of one request body, parsed (on the request's own thread, before it waits
    /// for a group): each numbered as in the body, blank lines left out.
    public struct Body: Sendable {
        let lines: [(Int, Parsed)]
        /// How many lines the body had that are events or refusals (not blank).
        public var count: Int { lines.count }

        public init(_ data: Data) {
            var reader = LineReader(data: data)
            var lines: [(Int, Parsed)] = []
            var number = 0
            while let next = reader.next() {
                number += 1
                switch next {
                case .overlong(let bytes): lines.append((number, .rejected("line is \(bytes) bytes, over the limit")))
                case .text(let data):
                    do {
                        if let event = try Ingestor.parseLine(data) { lines.append((number, .event(event))) }
                    } catch let error as EventError {
                        lines.append((number, .rejected(error.description)))
                    } catch {
                        lines.append((number, .rejected("not an event")))
                    }
                }
            }
            self.lines = lines
        }
    }

    /// Applies request bodies in the caller's transaction as one chunk, in the order given —
    /// exactly as if they had been posted one after another, hearts, shares and comments set
    /// at a time across them as the stream's are: each body's lines' outcomes (or why a line
    /// was refused), numbered as in that body. A line the rules refuse costs only itself; a
    /// failure of the store throws.
    public func apply(bodies: [Body]) throws -> [[(line: Int, outcome: Result<EventOutcome, EventError>)]] {
        // One numbering across the bodies, each body's lines after the last one's.
        var chunk: [(Int, Parsed)] = []
        var starts: [Int] = []
        var base = 0
        for body in bodies {
            starts.append(base)
            for (line, parsed) in body.lines { chunk.append((base + line, parsed)) }
            base += (body.lines.last?.0 ?? 0)
        }
        try lockRecipients(of: chunk)
        let results: [(Int, Result<EventOutcome, Refusal>)]
        do {
            results = try applyChunk(chunk)
        } catch let failure as LineFailure {
            throw failure.underlying
        }
        var answers = Array(repeating: [(line: Int, outcome: Result<EventOutcome, EventError>)](), count: bodies.count)
        var body = 0
        for (line, result) in results {  // in line order, so in body order
            while body + 1 < starts.count && line > starts[body + 1] { body += 1 }
            answers[body].append((line - starts[body], result.mapError { EventError($0.reason) }))
        }
        return answers
    }

    /// On PostgreSQL, where writers run side by side: locks the inboxes a chunk's hearts,
    /// shares and comments will update — their steps' owners and the authors of the comments
    /// they answer — in key order, before any is applied. One event at a time locks each as it
    /// comes, in arrival order, and two servers' groups that met the same two inboxes in opposite
    /// orders deadlocked: a second lost each time (PostgreSQL's deadlock_timeout), then one of
    /// them tried again. (A set locks its own in key order; a mention may still meet one late,
    /// which costs that rare deadlock and a retry, nothing else.)
    func lockRecipients(of chunk: [(Int, Parsed)]) throws {
        guard store.db.dialect.writersSideBySide else { return }
        var steps: [String] = [], comments: [String] = []
        for case (_, .event(let event)) in chunk {
            switch event.body {
            case let .interaction(_, _, step): steps.append(step)
            case let .comment(_, step, _, _, parent):
                steps.append(step)
                if let parent { comments.append(parent) }
            default: break
            }
        }
        guard steps.count + comments.count > 1 else { return }
        let db = store.db
        let keys = try db.prepare("""
            SELECT owner FROM steps WHERE ext IN (SELECT unnest(CAST(? AS TEXT[])))
            UNION SELECT author FROM comments WHERE ext IN (SELECT unnest(CAST(? AS TEXT[])))
            """).bind([KeySets.array(Array(Set(steps)).map(\.sqlValue)), KeySets.array(Array(Set(comments)).map(\.sqlValue))])
            .map { $0.int(0) }
        guard keys.count > 1 else { return }
        // One parameter a key: each partition of the hash-partitioned inboxes is given its own.
        try db.prepare("SELECT count(*) FROM (SELECT 1 FROM inboxes WHERE user IN ("
                       + Array(repeating: "?", count: keys.count).joined(separator: ", ") + ") ORDER BY user FOR UPDATE) AS locked")
            .bind(keys.sorted()).run()
    }

    /// Parses and applies one line on the calling thread; nil for a blank line.
    public func apply(_ data: Data) throws -> EventOutcome? {
        guard let event = try Ingestor.parseLine(data) else { return nil }
        return try store.apply(event)
    }
}

/// The serial output stage. A fan-out's rows are read back through a read-only connection of
/// its own (WAL lets it read what the writer committed while the writer goes on).
final class OutputStage: @unchecked Sendable {  // its connection (a C handle) and counts are touched on its serial queue alone
    private let queue = DispatchQueue(label: "stepo.ingest.output")
    private let open: () throws -> Connection
    private let onRow: (ActivityRow) throws -> Void
    private let onReject: (Int, String) -> Void
    private let onBatch: () -> Void
    private var reader: Connection?
    private var rows = 0
    private var batchChanges = 0
    private var failure: Error?
    /// Batches handed over and not yet written out, at most: when the output is the slower
    /// stage (rows printed to a slow reader), the store waits rather than the batches piling up
    /// in memory. Two: one printing while the next is decided.
    private let slots = DispatchSemaphore(value: 2)

    init(open: @escaping () throws -> Connection, onRow: @escaping (ActivityRow) throws -> Void, onReject: @escaping (Int, String) -> Void,
         onBatch: @escaping () -> Void) {
        self.open = open
        self.onRow = onRow
        self.onReject = onReject
        self.onBatch = onBatch
    }

    func report(_ items: [Ingestor.Item]) {
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            guard failure == nil else { return }
            do {
                for item in items {
                    switch item {
                    case .rejected(let line, let reason): onReject(line, reason)
                    case .outcome(let outcome): try emit(outcome)
                    }
                }
                onBatch()
            } catch {
                failure = error
            }
        }
    }

    private func emit(_ outcome: EventOutcome) throws {
        if !outcome.writtenRows.isEmpty || outcome.rowCount == 0 {
            for row in outcome.writtenRows {
                // A row is a batch only once someone joined it: that line is a change.
                if row.kind == .batch { batchChanges += 1 } else { rows += 1 }
                try onRow(row)
            }
            return
        }
        if reader == nil { reader = try open() }
        try Store.forEachRow(ofEvent: outcome, in: reader!) { row in
            rows += 1
            try onRow(row)
        }
    }

    /// Waits for everything reported to be written; returns the rows created and the batch
    /// changes written.
    func finish() throws -> (rows: Int, batchChanges: Int) {
        try queue.sync {
            reader = nil
            if let failure { throw failure }
            return (rows, batchChanges)
        }
    }
}

/// A bounded FIFO between two threads. `put` blocks while full; `take` blocks while empty and
/// returns nil once the queue is closed and drained.
final class BlockingQueue<Element>: @unchecked Sendable {  // its condition guards the elements, handed from one thread to another
    private let condition = NSCondition()
    /// What waits, at most `capacity`: a taken element leaves it at once. (It used to stay
    /// behind a moving head until a thousand had been taken, holding every parsed chunk of a
    /// long ingest: 220 bytes an event of a PostgreSQL ingest's memory.)
    private var items: [Element] = []
    private var closed = false
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// False when the queue was closed (the consumer gave up).
    func put(_ item: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    func take() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed { condition.wait() }
        return popLocked()
    }

    /// The next item if one is waiting now, without blocking.
    func poll() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return popLocked()
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func popLocked() -> Element? {
        guard !items.isEmpty else { return nil }
        let item = items.removeFirst()  // a few elements at most: the shift costs nothing
        condition.broadcast()
        return item
    }
}

extension String {
    /// The string for `data` when it is valid UTF-8 holding no NUL byte, else nil.
    public init?(validatingUTF8 data: Data) {
        guard !data.contains(0), let text = String(validating: data, as: UTF8.self) else { return nil }
        self = text
    }
}
