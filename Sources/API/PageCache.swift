import Foundation
import Synchronization

/// Pages as they were written, by what they answer: a page is computed once per change of the
/// store and then served as bytes until the store changes.
///
/// The key is a page's whole state, unhashed (`SyncPages.pageState`): the store's identity,
/// its newest settled version and that version's history mark, the reader and the query. Every
/// input to a page — rows, marks, revocations, and every fact the reader's visibility is judged
/// on (accounts, blocks, follows, privacy, deletions) — changes only through a change that
/// takes a version, so a page under a key is the page a fresh read would write: visibility is
/// still judged for each state, never carried across one. A page kept under an older state is
/// never asked for again (versions only grow) and leaves as newer pages come in.
///
/// Bounded by bytes, first in first out. Off (0 bytes) unless a server turns it on: the
/// embedded inbox, whose process is measured for memory, keeps none.
public final class PageCache: Sendable {
    public static let shared = PageCache()

    fileprivate struct State {
        var capacity = 0
        var bytes = 0
        var pages: [String: Data] = [:]
        /// Keys in the order they came, for eviction; `head` is the oldest still counted.
        var order: [String] = []
        var head = 0
        var hits = 0
        var misses = 0
    }

    private let state = Mutex(State())

    /// At most `bytes` of pages (0: none kept, and those kept are dropped).
    public func limit(to bytes: Int) {
        state.withLock { state in
            state.capacity = max(0, bytes)
            if state.capacity == 0 {
                state = State()
            } else {
                state.evict()
            }
        }
    }

    /// The page kept under `key`, if any.
    func page(for key: String) -> Data? {
        state.withLock { state in
            guard state.capacity > 0 else { return nil }
            let found = state.pages[key]
            if found == nil { state.misses += 1 } else { state.hits += 1 }
            return found
        }
    }

    /// Keeps `page` under `key` (not when larger than a quarter of the cache).
    func keep(_ page: Data, for key: String) {
        state.withLock { state in
            guard state.capacity > 0, page.count <= state.capacity / 4, state.pages[key] == nil else { return }
            state.pages[key] = page
            state.order.append(key)
            state.bytes += page.count + key.utf8.count
            state.evict()
        }
    }

    /// Pages answered from here and read afresh since the start (while on).
    public var counts: (hits: Int, misses: Int, bytes: Int) {
        state.withLock { ($0.hits, $0.misses, $0.bytes) }
    }
}

extension PageCache.State {
    /// Drops the oldest pages until the rest fit.
    fileprivate mutating func evict() {
        while bytes > capacity, head < order.count {
            let key = order[head]
            head += 1
            if let page = pages.removeValue(forKey: key) { bytes -= page.count + key.utf8.count }
        }
        // The keys already dropped are forgotten now and then, not one at a time.
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
