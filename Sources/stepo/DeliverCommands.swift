import CLI
import Backend
import Deliver
import Foundation
import Notifications

let devicesCommand = Command(
    name: "devices",
    summary: "List, add or remove a user's push devices.",
    usage: "stepo devices [--db FILE | --database URL] --user ID [--add TOKEN --platform apns|fcm [--environment sandbox|production]] [--remove TOKEN]",
    details: """
    Lists the user's devices: token, platform, environment, when registered, and whether the
    provider said the token is gone. --add registers one (a token registered again moves to
    this user); --remove takes one of theirs away. The API does the same: /v1/devices.
    """,
    options: ["db", "database", "user", "add", "platform", "environment", "remove"], flags: []
) { arguments in
    let store = try openStore(arguments)
    let user = try requireUser(store, arguments)
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    if let token = arguments["add"] {
        guard let platform = arguments["platform"].flatMap(DeviceRecord.Platform.init(rawValue:)) else {
            throw UsageError(description: "--add needs --platform apns|fcm")
        }
        guard let environment = DeviceRecord.Environment(rawValue: arguments["environment"] ?? "production") else {
            throw UsageError(description: "--environment is sandbox or production")
        }
        guard Devices.isValidToken(token) else {
            throw UsageError(description: "a token is 1–\(Devices.longestToken) printable ASCII characters without spaces or '/'")
        }
        try store.devices.register(token, platform: platform, environment: environment, for: user, at: now)
    }
    if let token = arguments["remove"], try !store.devices.remove(token, of: user) {
        throw CommandError(description: "\(Preview.visible(user.id)) has no device \(Preview.visible(token))")
    }
    let devices = try store.devices.list(of: user)
    if devices.isEmpty { Output.error("stepo devices: \(Preview.visible(user.id)) has no devices (--add TOKEN --platform apns|fcm registers one)") }
    for device in devices {
        Output.line([Preview.visible(device.token), device.platform.rawValue, device.environment.rawValue,
                     "registered \(Timestamp.format(device.registeredAt))",
                     device.disabledAt.map { "gone since \(Timestamp.format($0))" } ?? "live"].joined(separator: "  "))
    }
    return 0
}

let deliverCommand = Command(
    name: "deliver",
    summary: "Send the outbox's due pushes to APNs and FCM over HTTP/2 (--dry-run: print them).",
    usage: "stepo deliver [--db FILE | --database URL] [--apns-url URL --apns-key FILE.p8 --apns-key-id ID --apns-team ID [--apns-topic T]] "
        + "[--fcm-url URL --fcm-credentials FILE.json] [--ca FILE] [--lease SECONDS] [--batch N] [--streams N] [--once] [--dry-run [--limit N]]",
    details: """
    Every push a row sends is written to the outbox, one entry per live device of its
    recipient, in the same transaction as the row (docs/delivery.md). This worker claims due
    entries (several workers never send one twice), sends them, records every attempt, and
    settles each: sent, retried later with backoff, or dead. APNs uses token authentication
    (an ES256 JWT from the .p8 key, reused for 50 minutes); FCM uses HTTP v1 with an OAuth2
    token from the service-account key. --ca FILE trusts those certificates instead of the
    system's (a local stand-in's). A claim lasts --lease seconds (60): a worker killed mid-send
    leaves its entries to the next after that. A pass claims up to --batch entries (256) and
    sends them at once, up to --streams (128) at a time over one HTTP/2 connection per
    provider, claiming more as answers come. --once makes one pass and exits (1 when it could
    send nothing it tried, with the reason); --dry-run prints each due entry with the request it
    would make (an entry past its expiry marked "expired": the worker gives it up unsent), and
    sends nothing.
    """,
    options: ["db", "database", "limit", "apns-url", "apns-key", "apns-key-id", "apns-team", "apns-topic", "fcm-url", "fcm-credentials", "ca",
              "lease", "batch", "streams"],
    flags: ["dry-run", "once"]
) { arguments in
    let store = try openStore(arguments)
    if arguments.has("dry-run") {
        // What the worker would be told is checked here too: a dry run with a --batch the
        // worker refuses is no rehearsal.
        _ = try deliveryTuning(arguments)
        let limit = try arguments["limit"].map { text -> Int in
            guard let n = Int(text), n > 0 else { throw UsageError(description: "--limit takes a positive number") }
            return n
        } ?? 1000
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let due = try store.outbox.due(now: now, limit: limit)
        var withheld = 0
        var expired = 0
        // Judged as the worker judges a claimed batch (`SendJudgement`).
        let verdicts = try store.transaction { try SendJudgement.judge(due, queue: store.outbox, now: now) }
        for (entry, verdict) in zip(due, verdicts) {
            var content: PushContent
            switch verdict {
            case .send(let found): content = found
            case .superseded:
                withheld += 1
                Output.error("stepo deliver: entry \(entry.id) (row \(entry.row)) was held by quiet hours: a newer push of its thread goes instead")
                continue
            case .dropped(_, let description), .abandoned(let description):
                // The send-time rules drop it: not printed, only reported.
                withheld += 1
                Output.error("stepo deliver: entry \(entry.id) (row \(entry.row)) would be dropped: \(description)")
                continue
            }
            content.expiresAt = entry.expiresAt
            let request = entry.platform == .apns ? Payload.apns(content, deviceToken: entry.token) : Payload.fcm(content, deviceToken: entry.token)
            var members: [(String, JSON)] = [("entry", .int(entry.id)), ("row", .int(entry.row)), ("platform", .string(entry.platform.rawValue)),
                                             ("silent", .bool(content.silent)), ("request", request)]
            if entry.held { members.insert(("held", .string("quietHours")), at: 4) }
            // Past its expiry the worker gives it up unsent: shown, and marked so.
            if let expires = entry.expiresAt, expires <= now {
                expired += 1
                members.insert(("expired", .string(Timestamp.format(expires))), at: 4)
            }
            Output.line(JSON.members(members).serialized)
        }
        let going = due.count - withheld
        Output.error("stepo deliver: \(due.count) due entr\(due.count == 1 ? "y" : "ies")"
                     + (withheld > 0 ? ": \(going) would go, \(withheld) the rules now drop or a newer held push stands for" : "")
                     + (expired > 0 ? "; \(expired) of them past their expiry (marked \"expired\"), which the worker gives up unsent" : "")
                     + " (dry run: nothing sent)")
        return 0
    }
    let providers = try deliveryProviders(arguments)
    guard !providers.isEmpty else {
        throw UsageError(description: "name a provider (--apns-url …, --fcm-url …), or --dry-run to print what would go out")
    }
    // The worker reads a batch's rows and writes its answers: a bounded cache (32 MB, where 8
    // made 80,000 pushes cost a sixth more each than 20,000) keeps its memory flat however
    // large the store (docs/delivery.md, "Memory").
    try store.limitMemory(cacheKiB: 32_768)
    let worker = try deliveryWorker(store, providers, arguments, name: "worker-\(getpid())")
    if let lease = try seconds(arguments, "lease") { worker.lease = Int64(lease * 1000) }
    try deliverLoop(worker, once: arguments.has("once"), label: "stepo deliver")
    return 0
}

/// The providers the delivery options name (none when none is named).
func deliveryProviders(_ arguments: Arguments) throws -> [PushProvider] {
    var providers: [PushProvider] = []
    if let url = arguments["apns-url"] {
        guard let keyPath = arguments["apns-key"], let keyId = arguments["apns-key-id"], let team = arguments["apns-team"] else {
            throw UsageError(description: "--apns-url needs --apns-key, --apns-key-id and --apns-team")
        }
        guard let pem = FileManager.default.contents(atPath: keyPath).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw CommandError(description: "cannot read \(Preview.visible(keyPath))")
        }
        do {
            providers.append(try APNsProvider(settings: .init(url: url, keyPEM: pem, keyId: keyId, teamId: team,
                                                                topic: arguments["apns-topic"] ?? Payload.apnsTopic,
                                                                caFile: arguments["ca"])))
        } catch let error as SigningError { throw CommandError(description: error.description) }
    }
    if let url = arguments["fcm-url"] {
        guard let path = arguments["fcm-credentials"] else { throw UsageError(description: "--fcm-url needs --fcm-credentials") }
        guard let data = FileManager.default.contents(atPath: path), let json = try? JSON.parse(data) else {
            throw CommandError(description: "cannot read the service-account key \(Preview.visible(path))")
        }
        do {
            providers.append(try FCMProvider(settings: try .init(url: url, serviceAccount: json, caFile: arguments["ca"])))
        } catch let error as SigningError { throw CommandError(description: error.description) }
    }
    return providers
}

/// The `--batch` and `--streams` the arguments give, checked against the worker's limits.
func deliveryTuning(_ arguments: Arguments) throws -> (batch: Int?, streams: Int?) {
    func positive(_ option: String, upTo most: Int) throws -> Int? {
        guard let value = try arguments.integer(option) else { return nil }
        guard value > 0, value <= most else { throw UsageError(description: "--\(option) takes a number from 1 to \(most)") }
        return value
    }
    return (try positive("batch", upTo: DeliveryWorker.largestBatch), try positive("streams", upTo: DeliveryWorker.mostStreams))
}

/// A worker with the `--batch` and `--streams` the arguments give.
func deliveryWorker(_ store: Store, _ providers: [PushProvider], _ arguments: Arguments, name: String) throws -> DeliveryWorker {
    let tuning = try deliveryTuning(arguments)
    let worker = DeliveryWorker(queue: store.outbox, providers: providers, name: name, streams: tuning.streams ?? 128)
    if let batch = tuning.batch { worker.batch = batch }
    return worker
}

/// Passes of `worker` until stopped (`once`: one pass), reporting what each pass did; idle,
/// it looks again every 5 ms (a read of one index, cheap beside a push's wait).
func deliverLoop(_ worker: DeliveryWorker, once: Bool, label: String) throws {
    while true {
        let pass = try worker.runOnce(refill: !once)
        // A pass that only gave entries back to a resting provider is not news: said once, when
        // the provider was put to rest.
        if pass.total > 0, pass.total > pass.waited || !pass.problems.isEmpty || once, !label.isEmpty {
            Output.error("\(label): \(pass.sent) sent, \(pass.retried) to retry, \(pass.gone) tokens gone, \(pass.dead) dead"
                         + (pass.dropped > 0 ? ", \(pass.dropped) dropped by the rules" : "")
                         + (pass.waited > 0 ? ", \(pass.waited) waiting for a resting provider" : ""))
            for problem in pass.problems { Output.error("\(label): why: \(Preview.visible(problem))") }
        }
        if once {
            // One pass that could send nothing it tried is a failure to report, not a success.
            if pass.sent == 0, !pass.problems.isEmpty {
                throw CommandError(description: "nothing could be sent (\(pass.problems.count == 1 ? "" : "first: ")\(Preview.visible(pass.problems[0]))); the entries wait in the outbox")
            }
            return
        }
        if pass.total == 0 { worker.waitForWork(upTo: 0.2) }
    }
}
