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

    @Test("the reader refuses what RFC 8259 refuses and reads the rest exactly")
    func strictReading() throws {
        let refused: [[UInt8]] = [
            Array(#"{"a":1,}"#.utf8), Array("[01]".utf8), Array("\"a\u{01}b\"".utf8), Array(#""\ud800""#.utf8),
            Array(#""\udc00x""#.utf8), Array("[1] 2".utf8), Array("{\"a\" 1}".utf8),
            // Not UTF-8: a stray continuation byte, an overlong form, a truncated sequence
            // (three bytes of four: decoding it would make exactly three bytes again), and a
            // surrogate encoded directly.
            [0x22, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
            // The same after an escape (the slow path).
            [0x22, 0x5C, 0x6E, 0xF0, 0x9F, 0x98, 0x22],
        ]
        for bytes in refused {
            #expect(throws: JSON.ParseError.self, "\(bytes)") { try JSON.parse(Data(bytes)) }
        }
        #expect(try JSON.parse(Data([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22])) == .string("😀"))
        #expect(try JSON.parse(Data(#"["Trần\n🏃", "\ud83c\udfc3", 9223372036854775807]"#.utf8))
                == .array([.string("Trần\n🏃"), .string("🏃"), .int(Int.max)]))
        #expect(try JSON.parse(Data("[\(Int.max)0]".utf8)).array?.first?.int == nil)
    }
}
