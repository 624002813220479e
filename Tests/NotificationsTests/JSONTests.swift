import Foundation
import Testing
@testable import Notifications

@Suite("JSON text")
struct JSONTests {
    @Test("strings escape quotes, backslashes, C0 and C1 controls, DEL and line separators; the rest passes whole")
    func escaping() throws {
        let text = "say \"hi\" \\ now\n\tend\r\u{01}\u{7F}\u{85}\u{2028}\u{2029} — Trần 🏃"
        let written = JSON.string(text).serialized
        #expect(written == #""say \"hi\" \\ now\n\tend\r\u0001\u007f\u0085\u2028\u2029 — Trần 🏃""#)
        // What is written parses back to the same text.
        #expect(try JSON.parse(Data(#"{"t":\#(written)}"#.utf8))["t"] == .string(text))
    }

    @Test("objects keep their keys in order; numbers, booleans, null and fragments are written as they are")
    func structure() {
        let value: JSON = .object([("b", 1), ("a", .array([true, .null, .double(1.5), .fragment(#"{"x":2}"#)])), ("é", "ü")])
        #expect(value.serialized == #"{"b":1,"a":[true,null,1.5,{"x":2}],"é":"ü"}"#)
    }
}
