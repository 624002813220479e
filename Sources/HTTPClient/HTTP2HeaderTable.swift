import CHTTP2

/// HTTP/2 header fields as nghttp2 takes them: names and values in one buffer, the table of
/// `nghttp2_nv` pointing into it (nghttp2 copies both when a frame is submitted). The push
/// worker's client builds its requests with it, the bench's stand-in its answers.
public enum HTTP2HeaderTable {
    /// Calls `body` with the table of `fields` (names in lower case, pseudo-headers first).
    public static func with<Result>(_ fields: [(String, String)],
                                    _ body: (UnsafeMutablePointer<nghttp2_nv>, Int) -> Result) -> Result {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        var spans: [(name: Int, nameLength: Int, value: Int, valueLength: Int)] = []
        for (name, value) in fields {
            let nameStart = bytes.count
            bytes.append(contentsOf: name.utf8)
            let valueStart = bytes.count
            bytes.append(contentsOf: value.utf8)
            spans.append((nameStart, valueStart - nameStart, valueStart, bytes.count - valueStart))
        }
        return bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress ?? UnsafeMutablePointer<UInt8>(bitPattern: 1)!
            var table = spans.map {
                nghttp2_nv(name: base + $0.name, value: base + $0.value, namelen: $0.nameLength, valuelen: $0.valueLength,
                           flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return table.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }
}
