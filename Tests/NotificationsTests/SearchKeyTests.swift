import Testing
@testable import Notifications

/// The search key folds ASCII text two ways: byte by byte when all of it is ASCII, scalar by
/// scalar otherwise. On seeded random text both must give the same key.
@Suite("The search key")
struct SearchKeyTests {
    @Test("ASCII text folds the same on the byte path as on the scalar path", arguments: [1, 2, 3] as [UInt64])
    func twoPaths(seed: UInt64) {
        var state = seed
        func next() -> UInt64 {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for _ in 0..<2_000 {
            let text = String(String.UnicodeScalarView((0..<Int(next() % 40)).map { _ in Unicode.Scalar(UInt8(next() % 128)) }))
            // A non-ASCII letter that folds to "e" sends the same text down the scalar path.
            #expect(SearchKey.of(text) + "e" == SearchKey.of(text + "É"), "\(text.debugDescription)")
        }
        #expect(SearchKey.of("Chau CAO, Trail-Run 5K") == "chau cao, trail-run 5k")
    }
}
