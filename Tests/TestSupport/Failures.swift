import Foundation
import Synchronization

/// Errors collected from several threads.
public final class Failures: Sendable {
    private let items = Mutex<[String]>([])

    public init() {}

    public func add(_ item: String) { items.withLock { $0.append(item) } }

    public var all: [String] { items.withLock { $0 } }
}
