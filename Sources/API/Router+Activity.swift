import Backend
import Foundation
import Notifications
import Wire

extension Router {
    /// `GET /v1/activity?after=V&limit=N&wait=S`: the reader's changes after V, evaluated now
    /// (see `SyncPages.page`). With `wait`, an empty page is not answered until something
    /// changes or S seconds pass (the caller holds the request and asks again: see
    /// `HTTPResponse.longPoll`).
    func activity(_ request: HTTPRequest) throws -> HTTPResponse {
        let user = try user(request)
        let after = try integer(request, "after", default: 0, range: 0...Int.max)
        let limit = try integer(request, "limit", default: 500, range: 1...Router.largestPage)
        let wait = try integer(request, "wait", default: 0, range: 0...60)
        let afterRow = try request.query["afterRow"].map { _ in try integer(request, "afterRow", default: 0, range: 0...Int.max) }
        if let mark = request.query["history"] {
            guard Router.isMark(mark) else {
                throw APIError.invalid("history must be the mark a page answered (up to 16 hexadecimal digits)")
            }
            try reading(caughtUp: true) { try $0.sync.requireHistory(mark, at: after) }
        }
        let deadline = request.deadline ?? Date().addingTimeInterval(TimeInterval(wait))
        let parking = wait > 0 && deadline > Date()
        // A long-poll that comes back for more usually finds nothing yet: one look at the
        // version indexes says so without reading a page (the page would be empty).
        if parking, after > 0, afterRow == nil, !(try store.sync.hasChanges(for: user.key, after: after)) {
            var response = HTTPResponse.ok(.null)
            response.longPoll = LongPoll(userKey: user.key, after: after, deadline: deadline)
            return response
        }
        // The page's name as the store stands (read before the page: see `SyncPages.pageState`). A client
        // holding the page already, asking without waiting, is answered 304 without a page read.
        let query = "\(after)|\(afterRow.map(String.init) ?? "-")|\(limit)"
        let (key, tag) = try reading(caughtUp: true) { try $0.sync.pageState(for: user, query: query) }
        // (A long-poll whose wait ran out is asked once more, no longer parking: still a
        // long-poll, answered with its page, never 304.)
        if wait == 0, let held = request.headers["if-none-match"], Router.matches(held, tag) {
            var response = HTTPResponse(status: 304, jsonBytes: [])
            response.headers = Router.pageHeaders(tag)
            return response
        }
        var response = HTTPResponse(status: 200, jsonBytes: [])
        response.headers = Router.pageHeaders(tag)
        // Written already for this very state (only pages with something in them are kept).
        if let kept = PageCache.shared.page(for: key) {
            response.body = kept
            return response
        }
        let page = try reading(caughtUp: true) { try $0.sync.page(for: user, after: after, afterRow: afterRow, limit: limit) }
        if page.isEmpty, parking {
            var response = HTTPResponse.ok(.null)
            response.longPoll = LongPoll(userKey: user.key, after: after, deadline: deadline)
            return response
        }
        response.body = Data(page.bytes)
        if !page.isEmpty { PageCache.shared.keep(response.body, for: key) }
        return response
    }

    /// A page's validators: its tag, and that another token's page at the same address is
    /// another page.
    static func pageHeaders(_ tag: String) -> [(name: String, value: String)] {
        [("ETag", tag), ("Vary", "Authorization"), ("Cache-Control", "private, no-cache")]
    }

    /// Whether an `If-None-Match` value names `tag` (a list, `*`, or weak tags: RFC 9110 13.1.2
    /// compares weakly).
    static func matches(_ header: String, _ tag: String) -> Bool {
        if header == tag { return true }  // what a client sends back, nearly always
        return header.split(separator: ",").contains { item in
            var candidate = item.drop { $0 == " " || $0 == "\t" }
            while let last = candidate.last, last == " " || last == "\t" { candidate = candidate.dropLast() }
            if candidate == "*" { return true }
            if candidate.hasPrefix("W/") { candidate.removeFirst(2) }
            return candidate == tag
        }
    }

    /// The most rows one page may ask for.
    static let largestPage = 5000

    /// `POST /v1/mutations`: a client's numbered mutations, each applied at most once; those the
    /// world refuses come back in `refused`.
    func mutations(_ request: HTTPRequest) throws -> HTTPResponse {
        let user = try user(request)
        let body = try jsonBody(request)
        guard let client = body["client"]?.string, Router.isValidClient(client) else {
            throw APIError.invalid("client must be 1–64 letters, digits, '-' or '_'")
        }
        guard let list = body["mutations"]?.array else { throw APIError.invalid("mutations must be an array") }
        guard list.count <= Router.largestBatch else { throw APIError.invalid("at most \(Router.largestBatch) mutations at once") }
        let mutations = try list.map(Mutation.init(json:))
        // Where the client's copy stands: its mutations apply only on the history it synced from.
        var history: (mark: String, version: Int)?
        if let since = body["history"] {
            guard let mark = since["mark"]?.string, Router.isMark(mark), let version = since["version"]?.int, version >= 0 else {
                throw APIError.invalid("history must be {\"version\": V, \"mark\": M}, the version and mark a page answered")
            }
            history = (mark, version)
        }
        let receipt = try writing { try store.sync.apply(mutations, client: client, for: user, at: now(), history: history) }
        ChangeSignal.shared.signal()
        return .ok(receipt.json)
    }

    /// Whether `mark` can be a history mark: 1–16 hexadecimal digits.
    static func isMark(_ mark: String) -> Bool {
        !mark.isEmpty && mark.utf8.count <= 16 && mark.unicodeScalars.allSatisfy { $0.isASCII && Character($0).isHexDigit }
    }

    /// The most mutations one request may carry.
    static let largestBatch = 1000
    /// The most rows `POST /v1/events?rows=N` answers with (about 4 MB of them).
    static let largestRowsAnswer = 10_000

    static func isValidClient(_ client: String) -> Bool {
        !client.isEmpty && client.count <= 64
            && client.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_") }
    }
}

extension Router {
    /// `POST /v1/events` (admin): the NDJSON event contract; answers the report — counts, the
    /// refused lines and the version — and the rows the events wrote only when asked
    /// (`?rows=N`: the first N of them). A publish to a million followers answers a few hundred
    /// bytes, not the third of a gigabyte its rows would take.
    func events(_ request: HTTPRequest) throws -> HTTPResponse {
        // In-process, a request waiting for its group holds its thread (the HTTP server parks
        // its connection instead: startEvents, finishEvents).
        let pending = try startEvents(request)
        if !pending.leadsNow { pending.member.wait() }
        return try report(of: pending)
    }

    /// The first half of `POST /v1/events`: checks the token and the query, parses the body
    /// (here, side by side with other requests) and joins the group being gathered, to be
    /// written with every body posted meanwhile (EventGroups): one transaction, one commit.
    public func startEvents(_ request: HTTPRequest) throws -> PendingEvents {
        guard request.body.count <= Router.maximumBody else { throw APIError.tooLarge }
        try admin(request)
        let wanted = try integer(request, "rows", default: 0, range: 0...Router.largestRowsAnswer)
        let member = EventGroups.Member(body: Ingestor.Body(request.body), wanted: wanted)
        let groups = EventGroups.of(store)
        return PendingEvents(member: member, groups: groups, leadsNow: groups.join(member))
    }

    /// The second half: once the request leads (at once, or woken to) its group is written on
    /// this router's connection; once it is answered, its report.
    public func finishEvents(_ pending: PendingEvents) -> HTTPResponse {
        do {
            return try report(of: pending)
        } catch {
            return response(for: error)
        }
    }

    private func report(of pending: PendingEvents) throws -> HTTPResponse {
        if pending.mustLead { pending.groups.lead(pending.member, writing: write) }
        let done = try pending.member.answer!.get()
        let wanted = pending.member.wanted
        var rejects: [JSON] = []
        var report = Ingestor.Report()
        var written = 0
        var version = 0
        for (line, result) in done.lines {
            switch result {
            case .success(let outcome):
                if outcome.repeated { report.repeated += 1 } else { report.applied += 1 }
                version = max(version, outcome.eventKey)
                written += outcome.rowCount
            case .failure(let error):
                report.rejected += 1
                rejects.append(.object([("line", .int(line)), ("reason", .string(error.description))]))
            }
        }
        let rows = done.rows
        var answer: [(String, JSON)] = [
            ("applied", .int(report.applied)), ("repeated", .int(report.repeated)),
            ("rejected", .array(rejects)), ("rowsWritten", .int(written)), ("version", .int(version)),
        ]
        if wanted > 0 { answer.append(("rows", .array(rows))) }
        return HTTPResponse(status: report.rejected > 0 && report.applied == 0 && report.repeated == 0 ? 422 : 200, json: .object(answer))
    }
}
