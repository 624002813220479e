import Foundation
import SQLite
import Testing
import TestSupport
@_spi(Bench) @testable import Backend

/// The queue between an ingest's reader and its writer holds what waits, and nothing taken:
/// it kept every parsed chunk behind a moving head until a thousand had gone by, so a long
/// PostgreSQL ingest grew by about 220 bytes an event (104 MB at 250,000; 45 MB since).
@Suite("The ingest's queue")
struct IngestQueueTests {
    final class Chunk: Sendable {}

    @Test("a taken element is released at once, whatever went before it")
    func takenIsReleased() throws {
        let queue = BlockingQueue<Chunk>(capacity: 4)
        var gone: [() -> Bool] = []
        for _ in 0..<50 {
            do {
                let chunk = Chunk()
                weak let watched = chunk
                gone.append { watched == nil }
                #expect(queue.put(chunk))
            }
            _ = try #require(queue.take())
            #expect(gone.allSatisfy { $0() }, "a chunk taken from the queue is still held by it")
        }
        // Polling releases as taking does; what waits stays until taken.
        #expect(queue.put(Chunk()) && queue.put(Chunk()))
        #expect(queue.poll() != nil)
        #expect(queue.take() != nil)
        #expect(queue.poll() == nil)
    }

    @Test("put waits while the queue is full, and close wakes both sides")
    func bounded() throws {
        let queue = BlockingQueue<Int>(capacity: 2)
        #expect(queue.put(1) && queue.put(2))
        let third = DispatchSemaphore(value: 0)
        Thread { _ = queue.put(3); third.signal() }.start()
        #expect(third.wait(timeout: .now() + 0.2) == .timedOut, "a third element went into a queue of two")
        #expect(queue.take() == 1)
        #expect(third.wait(timeout: .now() + 5) == .success)
        #expect(queue.take() == 2 && queue.take() == 3)
        queue.close()
        #expect(queue.take() == nil)
        #expect(!queue.put(4))
    }
}

/// A long ingest keeps a bounded set of statements prepared: a statement text with a run's own
/// values in it was prepared, and kept, for every run (120 bytes an event of a million-event
/// ingest's memory, found 2026-12-07).
@Suite("A long ingest prepares the same statements again")
struct PreparedStatementsTests {
    @Test("three times the events add no statement texts beyond the first third's few dozen sizes")
    func boundedStatements() throws {
        let witness = StatementWitness()
        Database.witness = witness
        defer { Database.witness = nil }
        let folder = NSTemporaryDirectory() + "stepo-prepared-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/store.db"
        let store = try Store(path: path)
        let lines = RandomStream(seed: 77, events: 8_000).lines
        func ingest(_ part: ArraySlice<String>) throws {
            var ingestor = Ingestor(store: store)
            ingestor.chunkLines = 256
            ingestor.smallestSet = 1
            _ = try ingestor.ingest(LineReader(data: Data((part.joined(separator: "\n") + "\n").utf8)), onRow: { _ in }, onReject: { _, _ in })
        }
        try ingest(lines[..<2_000])
        let first = witness.statements(on: path)
        try ingest(lines[2_000...])
        let all = witness.statements(on: path)
        let added = all.subtracting(first)
        #expect(added.count <= 64, "\(added.count) new statement texts (of \(all.count)), e.g. \(added.sorted().prefix(3).map { String($0.prefix(300)) })")
    }
}
