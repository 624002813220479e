import Foundation
import Notifications

/// A stamp over many rows: every row of the reader's up to `throughRow` (a row id) is seen,
/// or read, as of `at`. One mark travels instead of a million re-versioned rows; a row's
/// `seenAt` is the time of the first mark that covers it (or its own stamp, if earlier).
public struct Mark: Equatable, Sendable {
    public enum Kind: String, Sendable { case seen, read }

    public var kind: Kind
    public var throughRow: Int
    public var at: Int64
    public var version: Int

    public init(kind: Kind, throughRow: Int, at: Int64, version: Int) {
        self.kind = kind
        self.throughRow = throughRow
        self.at = at
        self.version = version
    }

    public var json: JSON {
        .object([("kind", .string(kind.rawValue)), ("throughRow", .int(throughRow)),
                 ("at", .string(Timestamp.format(at))), ("version", .int(version))])
    }

    public init(json: JSON) throws {
        let m = try Members(json, "mark")
        let name = try m.string("kind")
        guard let kind = Kind(rawValue: name) else { throw WireError("mark.kind \(name) is unknown") }
        self.init(kind: kind, throughRow: try m.int("throughRow"), at: try m.time("at"), version: try m.int("version"))
    }
}

/// What a replica must give up, because its reader may no longer see it.
public struct Drops: Equatable, Sendable {
    /// People the reader may not see at all any more (a block either way, a banned or
    /// deactivated account): their profile, what they own, what they wrote, and what the
    /// reader's rows quote of it.
    public var people: [String]
    /// People whose content the reader may no longer see (they went private, or the reader
    /// stopped following them while private): their steps and journeys, the comments on those
    /// steps, and what rows quote of them. Their profile stays.
    public var owners: [String]
    /// Deleted steps (with their comments).
    public var steps: [String]
    /// Deleted comments, or comments by someone the reader may no longer see.
    public var comments: [String]
    /// Journeys the reader may no longer see.
    public var journeys: [String]

    public init(people: [String] = [], owners: [String] = [], steps: [String] = [], comments: [String] = [],
                journeys: [String] = []) {
        self.people = people
        self.owners = owners
        self.steps = steps
        self.comments = comments
        self.journeys = journeys
    }

    public var isEmpty: Bool { people.isEmpty && owners.isEmpty && steps.isEmpty && comments.isEmpty && journeys.isEmpty }

    public var json: JSON {
        .object([("people", .array(people.map(JSON.string))), ("owners", .array(owners.map(JSON.string))),
                 ("steps", .array(steps.map(JSON.string))), ("comments", .array(comments.map(JSON.string))),
                 ("journeys", .array(journeys.map(JSON.string)))])
    }

    public init(json: JSON?) throws {
        guard let json, !json.isNull else { self.init(); return }
        let m = try Members(json, "drops")
        self.init(people: try m.strings("people"), owners: try m.strings("owners"), steps: try m.strings("steps"),
                  comments: try m.strings("comments"), journeys: try m.strings("journeys"))
    }
}

/// One answer of `GET /v1/activity`: the reader's changes after a version.
public struct ActivityPage: Equatable, Sendable {
    public var rows: [ActivityRow]
    public var entities: Entities
    public var counts: Counts
    /// The version to ask after next.
    public var next: Int
    public var marks: [Mark]
    public var drops: Drops
    /// The identity of the store that answered: a replica belongs to one store.
    public var store: String?
    /// The reader's rows in all, on a first page (after 0): how far an initial sync has to go.
    public var total: Int?
    /// Whether more changes are waiting after `next` (ask again at once).
    public var more: Bool
    /// When the page ended inside a version: the last row sent, to ask `afterRow` with.
    public var nextRow: Int?
    /// The store's history mark at `next`: asked again with `history`, it tells a replica
    /// whose store went back in time (restored from an older copy) from one that is behind.
    public var history: String?
    /// The store pruned every row of the reader's up to this row id (`stepo prune`): a replica
    /// drops what it holds there. Sent on every page while there is one, as one number.
    public var prunedThrough: Int?

    public init(rows: [ActivityRow], entities: Entities, counts: Counts, next: Int, marks: [Mark] = [], drops: Drops = Drops(),
                store: String? = nil, total: Int? = nil, more: Bool = false) {
        self.rows = rows
        self.entities = entities
        self.counts = counts
        self.next = next
        self.marks = marks
        self.drops = drops
        self.store = store
        self.total = total
        self.more = more
    }

    /// Whether the page carries nothing: no rows, marks or drops.
    public var isEmpty: Bool { rows.isEmpty && marks.isEmpty && drops.isEmpty }

    public var json: JSON { .fragment(String(decoding: bytes, as: UTF8.self)) }

    /// The page as JSON text, its rows written straight into the bytes.
    public var bytes: [UInt8] {
        var w = JSONWriter(capacity: 700 * rows.count + 4096)
        w.beginObject()
        w.key("rows")
        w.beginArray()
        for row in rows { row.write(to: &w, state: true) }
        w.endArray()
        w.key("entities"); w.value(entities.json)
        w.key("counts"); w.value(counts.json)
        w.key("next"); w.int(next)
        w.key("marks"); w.value(.array(marks.map(\.json)))
        w.key("drops"); w.value(drops.json)
        if let store { w.key("store"); w.string(store) }
        if let total { w.key("total"); w.int(total) }
        w.key("more"); w.bool(more)
        if let nextRow { w.key("nextRow"); w.int(nextRow) }
        if let history { w.key("history"); w.string(history) }
        if let prunedThrough { w.key("prunedThrough"); w.int(prunedThrough) }
        w.endObject()
        return w.bytes
    }

    public init(json: JSON) throws {
        try self.init(data: Data(json.serialized.utf8))
    }

    /// Reads a page from its JSON text: rows straight from the bytes, the rest as small trees.
    public init(data: Data) throws {
        var rows: [ActivityRow] = []
        var rest: [(String, JSON)] = []
        var sawRows = false
        try JSONReader.read(data) { r in
            guard (try? r.beginObject()) != nil else { throw WireError("page must be an object") }
            while let key = try r.nextKey() {
                if key == "rows" {
                    sawRows = true
                    guard (try? r.beginArray()) != nil else { throw WireError("page.rows must be an array") }
                    while try r.nextElement() { rows.append(try ActivityRow(reading: &r)) }
                } else {
                    rest.append((key, try r.value()))
                }
            }
        }
        guard sawRows else { throw WireError("page.rows must be an array") }
        let json = JSON.object(rest)
        let m = try Members(json, "page")
        self.init(rows: rows, entities: try Entities(json: json["entities"]),
                  counts: try Counts(json: json["counts"] ?? .null), next: try m.int("next"),
                  marks: try m.array("marks", optional: true).map(Mark.init(json:)), drops: try Drops(json: json["drops"]),
                  store: try m.optionalString("store"), total: try m.optionalInt("total"), more: try m.bool("more", default: false))
        nextRow = try m.optionalInt("nextRow")
        history = try m.optionalString("history")
        prunedThrough = try m.optionalInt("prunedThrough")
    }
}
