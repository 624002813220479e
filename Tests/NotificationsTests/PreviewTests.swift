import Testing
@testable import Notifications

@Suite("Copy rules for previews")
struct PreviewTests {
    @Test("emoji are removed, letters with marks stay")
    func emojiRemoved() {
        #expect(Preview.clean("so proud 🎉 of this one 👍🏽") == "so proud of this one")
        #expect(Preview.clean("Linh Trần 🇻🇳") == "Linh Trần")
        #expect(Preview.clean("keycap 1️⃣ and heart ❤️ gone") == "keycap and heart gone")
        #expect(Preview.clean("© 2026 Stepo™ 5 km") == "© 2026 Stepo™ 5 km")
    }

    @Test("control characters are removed and whitespace collapses to one space")
    func controlsAndWhitespace() {
        #expect(Preview.clean("  line one\n\n\tline two  ") == "line one line two")
        #expect(Preview.clean("red\u{1B}[31malert\u{07}") == "red[31malert")
        #expect(Preview.clean("abc\u{202E}def\u{200B}") == "abcdef")
    }

    @Test("a preview of 150 characters is kept whole")
    func exactlyAtLimit() {
        let text = String(repeating: "a", count: 150)
        #expect(Preview.of(text) == text)
    }

    @Test("a longer preview is cut at a word and ends with an ellipsis, 150 characters at most")
    func cutAtWord() {
        let words = Array(repeating: "walking", count: 30).joined(separator: " ")  // 239 characters
        let preview = Preview.of(words)
        #expect(preview.count <= 150)
        #expect(preview.hasSuffix("walking…"))
        #expect(!preview.dropLast().hasSuffix(" "))
        #expect(words.hasPrefix(String(preview.dropLast())))
    }

    @Test("a single word longer than the limit is cut inside the word")
    func longWord() {
        let preview = Preview.of(String(repeating: "x", count: 400))
        #expect(preview == String(repeating: "x", count: 149) + "…")
    }

    @Test("the limit counts characters, not bytes: Vietnamese and decomposed marks count once")
    func graphemes() {
        let word = "Nguye\u{0302}\u{0303}n "  // 6 characters, 9 scalars
        let text = String(repeating: word, count: 30)
        let preview = Preview.of(text)
        #expect(preview.count <= 150)
        #expect(preview.count > 140)
    }

    @Test("terminal-visible text shows escapes as placeholders")
    func visible() {
        #expect(Preview.visible("a\u{1B}[2Jb\rc") == "a␛[2Jb␍c")
        #expect(Preview.visible("x\u{202E}y") == "x\u{FFFD}y")
    }
}

@Suite("Time")
struct TimestampTests {
    @Test("RFC 3339 parses with Z, fractions and offsets, and formats back in UTC")
    func roundTrip() throws {
        let t = try #require(Timestamp.parse("2026-11-29T12:00:00Z"))
        #expect(Timestamp.format(t) == "2026-11-29T12:00:00Z")
        #expect(Timestamp.parse("2026-11-29T13:00:00+01:00") == t)
        #expect(Timestamp.parse("2026-11-29T12:00:00.250Z") == t + 250)
        #expect(Timestamp.format(t + 250) == "2026-11-29T12:00:00.250Z")
        #expect(Timestamp.parse("1970-01-01T00:00:00Z") == 0)
    }

    @Test("every year from 0000 to 9999 formats with four digits, and parses back to the same instant")
    func fourDigitYears() throws {
        for text in ["0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "0099-12-31T23:59:59Z", "0999-06-15T12:00:00.5Z", "9999-12-31T23:59:59Z"] {
            let t = try #require(Timestamp.parse(text))
            let formatted = Timestamp.format(t)
            #expect(Timestamp.parse(formatted) == t, "\(text) → \(formatted)")
            #expect(formatted.prefix(5) == text.prefix(5))
        }
    }

    @Test("what is not RFC 3339 is refused")
    func invalid() {
        for text in ["yesterday", "2026-11-29", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-29T12:00:00"] {
            #expect(Timestamp.parse(text) == nil, "\(text)")
        }
    }
}
