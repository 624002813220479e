import Foundation

/// Splits a byte stream into lines without ever holding more than one line (up to the
/// limit) in memory. A longer line is reported as overlong and skipped to its newline.
public struct LineReader: @unchecked Sendable {  // owns a file descriptor: read by one thread, handed over whole
    public enum Line {
        case text(Data)
        case overlong(bytes: Int)
    }

    public static let defaultLimit = 1 << 20

    private let readChunk: () -> Data?
    private let limit: Int
    private var buffer = Data()
    private var start = 0
    private var finished = false
    private var skipping = 0

    /// `readChunk` returns the next bytes, or nil (or empty) at the end.
    public init(limit: Int = LineReader.defaultLimit, readChunk: @escaping () -> Data?) {
        self.limit = limit
        self.readChunk = readChunk
    }

    /// Reads a file descriptor (stdin, a file) in 64 KiB chunks.
    public init(fileDescriptor: Int32, limit: Int = LineReader.defaultLimit) {
        self.init(limit: limit) {
            var chunk = Data(count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress, 65_536) }
            guard count > 0 else { return nil }
            chunk.count = count
            return chunk
        }
    }

    /// Lines of an in-memory body.
    public init(data: Data, limit: Int = LineReader.defaultLimit) {
        var pending: Data? = data
        self.init(limit: limit) {
            defer { pending = nil }
            return pending
        }
    }

    /// Whether a whole line is already buffered, so `next()` will not wait on the input.
    public var hasBufferedLine: Bool {
        newline(from: start) != nil || (finished && buffer.count > start)
    }

    /// The index of the next newline at or after `from`, found with memchr (Data's own search
    /// walks it a byte at a time through an iterator).
    private func newline(from: Int) -> Int? {
        let offset = from - buffer.startIndex
        guard offset >= 0, offset < buffer.count else { return nil }
        return buffer.withUnsafeBytes { bytes -> Int? in
            guard let base = bytes.baseAddress else { return nil }
            guard let found = memchr(base + offset, 0x0A, bytes.count - offset) else { return nil }
            return buffer.startIndex + base.distance(to: UnsafeRawPointer(found))
        }
    }

    /// The next line without its terminator (`\n` or `\r\n`), or nil at the end.
    public mutating func next() -> Line? {
        while true {
            if let newline = newline(from: start) {
                var end = newline
                let length = newline - start + skipping
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                let line = buffer[start..<end]
                start = newline + 1
                compact()
                if skipping > 0 || length > limit {
                    skipping = 0
                    return .overlong(bytes: length)
                }
                return .text(Data(line))
            }
            let pendingBytes = buffer.count - start
            if pendingBytes > limit {
                // Drop what we hold; keep counting until this line ends.
                skipping += pendingBytes
                buffer.removeAll(keepingCapacity: true)
                start = 0
            }
            if finished {
                guard buffer.count > start || skipping > 0 else { return nil }
                let line = buffer[start...]
                let length = line.count + skipping
                buffer.removeAll()
                start = 0
                if skipping > 0 || length > limit {
                    skipping = 0
                    return .overlong(bytes: length)
                }
                return .text(Data(line))
            }
            if let chunk = readChunk(), !chunk.isEmpty {
                buffer.append(chunk)
            } else {
                finished = true
            }
        }
    }

    private mutating func compact() {
        if start > 65_536 && start > buffer.count / 2 {
            buffer.removeSubrange(buffer.startIndex..<start)
            start = buffer.startIndex
        }
    }
}
