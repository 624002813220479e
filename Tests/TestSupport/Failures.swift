import Foundation

/// Errors collected from several threads.
public final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []

    public init() {}

    public func add(_ item: String) { lock.lock(); items.append(item); lock.unlock() }

    public var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
}
