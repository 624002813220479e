import Backend
import Foundation
import Notifications

extension Router {
    /// `GET /v1/activity?after=V&limit=N&wait=S`: the rows changed after V, the counts, the
    /// next V. With `wait`, an empty page is not answered until something changes or S
    /// seconds pass (the caller holds the request and asks again: see `HTTPResponse.longPoll`).
    func activity(_ request: HTTPRequest) throws -> HTTPResponse {
        let user = try user(request)
        let after = try integer(request, "after", default: 0, range: 0...Int.max)
        let limit = try integer(request, "limit", default: 500, range: 1...1000)
        let wait = try integer(request, "wait", default: 0, range: 0...60)
        let page = try store.changes(for: user, after: after, limit: limit)
        if page.rows.isEmpty, wait > 0 {
            let deadline = request.deadline ?? Date().addingTimeInterval(TimeInterval(wait))
            if deadline > Date() {
                var response = HTTPResponse.ok(.null)
                response.longPoll = LongPoll(userKey: user.key, after: after, deadline: deadline)
                return response
            }
        }
        return .ok(.object([
            ("rows", .array(page.rows.map(\.json))),
            ("entities", try store.entitiesJSON(for: page.rows, viewer: user)),
            ("counts", try store.counts(for: user.key).json),
            ("next", .int(page.next)),
        ]))
    }

    /// `POST /v1/mutations`: a client's numbered mutations, each applied at most once.
    func mutations(_ request: HTTPRequest) throws -> HTTPResponse {
        let user = try user(request)
        let body = try jsonBody(request)
        guard let client = body["client"]?.string, Router.isValidClient(client) else {
            throw APIError.invalid("client must be 1–64 letters, digits, '-' or '_'")
        }
        guard let list = body["mutations"]?.array else { throw APIError.invalid("mutations must be an array") }
        let mutations = try list.map(Router.mutation)
        let result = try writing { try store.apply(mutations, client: client, for: user, at: now()) }
        ChangeSignal.shared.signal()
        return .ok(.object([("applied", .int(result.applied)), ("counts", result.counts.json)]))
    }

    /// The preference switches a JSON object sets (any of `Preferences.switchNames`, as
    /// booleans); at least one.
    static func preferenceChanges(_ json: JSON, in context: String) throws -> [(Category?, Bool)] {
        var changes: [(Category?, Bool)] = []
        for key in Preferences.switchNames {
            guard let value = json[key] else { continue }
            guard let flag = value.bool else { throw APIError.invalid("\(context): \(key) must be true or false") }
            changes.append((Category(rawValue: key), flag))
        }
        guard !changes.isEmpty else {
            throw APIError.invalid("\(context) sets none of \(Preferences.switchNames.joined(separator: ", "))")
        }
        return changes
    }

    static func isValidClient(_ client: String) -> Bool {
        !client.isEmpty && client.count <= 64
            && client.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_") }
    }

    static func mutation(_ json: JSON) throws -> Mutation {
        guard let seq = json["seq"]?.int, seq > 0 else { throw APIError.invalid("each mutation needs a positive seq") }
        func field<T>(_ name: String, _ read: (JSON) -> T?) throws -> T {
            guard let value = json[name].flatMap(read) else { throw APIError.invalid("mutation \(seq) needs \(name)") }
            return value
        }
        switch json["type"]?.string {
        case "seen": return Mutation(seq: seq, action: .seen(upTo: try field("upTo", \.int)))
        case "read": return Mutation(seq: seq, action: .read(row: try field("id", \.int)))
        case "followBack": return Mutation(seq: seq, action: .followBack(user: try field("user", \.string)))
        case "acceptRequest": return Mutation(seq: seq, action: .acceptRequest(user: try field("user", \.string)))
        case "declineRequest": return Mutation(seq: seq, action: .declineRequest(user: try field("user", \.string)))
        case "preferences":
            return Mutation(seq: seq, action: .preferences(try preferenceChanges(json, in: "mutation \(seq)")))
        case let other:
            throw APIError.invalid("mutation \(seq) has unknown type \(other.map { "\"\(Preview.visible($0))\"" } ?? "(none)")")
        }
    }
}

extension Router {
    /// `POST /v1/events` (admin): the NDJSON event contract; answers the report and the rows.
    func events(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let token = request.bearerToken, let holder = try store.holder(ofToken: token) else { throw APIError.unauthorized }
        guard holder.isAdmin else { throw APIError.forbidden }
        var rows: [JSON] = []
        var rejects: [JSON] = []
        var report = Ingestor.Report()
        var reader = LineReader(data: request.body)
        var line = 0
        let ingestor = Ingestor(store: store)
        // One transaction for the body (each event still its own savepoint): one commit, not one per line.
        try writing {
            try store.db.transaction {
                while let next = reader.next() {
                    line += 1
                    do {
                        switch next {
                        case .overlong(let bytes): throw EventError("line is \(bytes) bytes, over the limit")
                        case .text(let data):
                            guard let outcome = try ingestor.apply(data) else { continue }
                            if outcome.repeated { report.repeated += 1 } else { report.applied += 1 }
                            try store.forEachRow(ofEvent: outcome) { rows.append($0.contractJSON) }
                        }
                    } catch let error as EventError {
                        report.rejected += 1
                        rejects.append(.object([("line", .int(line)), ("reason", .string(error.description))]))
                    }
                }
            }
        }
        if report.applied > 0 { ChangeSignal.shared.signal() }
        return HTTPResponse(status: report.rejected > 0 && report.applied == 0 && report.repeated == 0 ? 422 : 200, json: .object([
            ("applied", .int(report.applied)), ("repeated", .int(report.repeated)),
            ("rejected", .array(rejects)), ("rows", .array(rows)),
        ]))
    }
}
