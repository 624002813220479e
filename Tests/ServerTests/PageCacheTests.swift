import Foundation
import HTTPClient
import Notifications
import Testing
import TestSupport
@testable import Backend

/// The page cache is a second place pages come from: a page kept by `stepo serve` must be the
/// page a server keeping none writes afresh, byte for byte, whatever happened in between.
@Suite("The page cache: kept pages are the pages written afresh")
struct PageCacheTests {
    let folder = NSTemporaryDirectory() + "stepo-pagecache-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func get(_ address: String, _ path: String, token: String) throws -> (status: Int, body: Data) {
        let answer = try HTTPClient().perform(method: "GET", url: address + path, headers: [("Authorization", "Bearer \(token)")], timeout: 30)
        return (answer.status, answer.body)
    }

    @Test("a seeded stream of every event type (blocks, bans, privacy, deletes) posted block by block: every reader's pages from the keeping server, asked twice, equal a non-keeping server's",
          arguments: [21, 22] as [UInt64])
    func keptEqualsWritten(seed: UInt64) throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let location = try TestEngine.location(folder, "cache.db")
        let store = try Store(location: location)
        let people = 8
        let stream = RandomStream(seed: seed, events: 700, people: people)
        // The people first (the stream opens with them), so that their tokens can be made.
        let opening = stream.lines.prefix(people).joined(separator: "\n") + "\n"
        _ = try Ingestor(store: store).ingest(LineReader(data: Data(opening.utf8)), onRow: { _ in }, onReject: { _, _ in })
        var tokens: [String] = []
        for i in 0..<people { tokens.append(try store.tokens.create(for: try #require(try store.user("p\(i)")), admin: false, at: 0)) }
        let admin = try store.tokens.create(for: nil, admin: true, at: 0)

        let (keeping, kept) = try Stepo.serve(location, log: folder + "/keeping.log", ["--page-cache", "16"])
        defer { keeping.stop() }
        let (writing, written) = try Stepo.serve(location, log: folder + "/writing.log", ["--page-cache", "0"])
        defer { writing.stop() }

        var compared = 0
        var keepable = 0
        var mismatches: [String] = []
        var after = [Int](repeating: 0, count: people)
        let rest = Array(stream.lines.dropFirst(people))
        for start in stride(from: 0, to: rest.count, by: 35) {
            let block = rest[start..<min(start + 35, rest.count)].joined(separator: "\n") + "\n"
            let posted = try HTTPClient().perform(method: "POST", url: kept + "/v1/events", headers: [("Authorization", "Bearer \(admin)")],
                                                  body: Data(block.utf8), timeout: 60)
            #expect(posted.status == 200, "\(String(decoding: posted.body, as: UTF8.self))")
            for reader in 0..<people {
                for path in ["/v1/activity?limit=50", "/v1/activity?limit=5000", "/v1/activity?after=\(after[reader])&limit=20"] {
                    let first = try get(kept, path, token: tokens[reader])
                    let again = try get(kept, path, token: tokens[reader])
                    let fresh = try get(written, path, token: tokens[reader])
                    compared += 1
                    // A page with something in it is kept: the second ask comes from the cache.
                    if fresh.status == 200, let page = try? JSON.parse(fresh.body),
                       !(page["rows"]?.array?.isEmpty ?? true) || !(page["marks"]?.array?.isEmpty ?? true)
                        || ["people", "owners", "steps", "comments", "journeys"].contains(where: { !(page["drops"]?[$0]?.array?.isEmpty ?? true) }) {
                        keepable += 1
                    }
                    if first.status != fresh.status || first.body != fresh.body || again.status != fresh.status || again.body != fresh.body {
                        mismatches.append("p\(reader) \(path) after block \(start / 35): kept \(first.status)/\(again.status), written \(fresh.status)")
                    }
                }
                // The next incremental page starts where this reader's last page ended.
                if let next = try? JSON.parse(try get(written, "/v1/activity?after=\(after[reader])&limit=20", token: tokens[reader]).body)["next"]?.int {
                    after[reader] = next
                }
            }
        }
        #expect(mismatches.count == 0, "\(mismatches.count) of \(compared) pages differ: \(mismatches.prefix(5).joined(separator: "; "))")
        // The keeping server did answer from what it kept, and the other kept nothing.
        let health = try JSON.parse(try get(kept, "/v1/health", token: admin).body)
        #expect(keepable > compared / 2, "only \(keepable) of \(compared) pages had anything in them")
        #expect((health["pageCache"]?["hits"]?.int ?? 0) >= keepable, "\(health)")
        let other = try JSON.parse(try get(written, "/v1/health", token: admin).body)
        #expect(other["pageCache"]?["hits"]?.int == 0 && other["pageCache"]?["bytes"]?.int == 0, "\(other)")
    }
}
