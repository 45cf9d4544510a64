import Foundation
import PierRuntime
import Testing

/// Pier writes and reads UUIDs itself (Foundation's formatting costs a print per id).
@Suite struct UUIDTextTests {
    @Test func textRoundTripsAndMatchesFoundation() {
        for _ in 0..<200 {
            let id = UUID()
            #expect(id.text() == id.uuidString.lowercased())
            #expect(id.text(uppercase: true) == id.uuidString)
            #expect(UUID(text: id.text()) == id)
            #expect(UUID(text: id.uuidString) == id)
        }
    }

    /// Version 4, the RFC variant, and no two alike: every random bit is used.
    @Test func randomIdsAreVersion4AndDistinct() {
        let ids = (0..<2000).map { _ in UUID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let text = id.text()
            #expect(Array(text)[14] == "4" && "89ab".contains(Array(text)[19]), "\(text)")
            #expect(UUID(text: text) == id)
        }
        // Each of the 122 random bits is set in some id and clear in another.
        var ones = [UInt8](repeating: 0, count: 16), zeros = [UInt8](repeating: 0, count: 16)
        for id in ids {
            withUnsafeBytes(of: id.uuid) { bytes in
                for index in 0..<16 {
                    ones[index] |= bytes[index]
                    zeros[index] |= ~bytes[index]
                }
            }
        }
        let fixedOnes: [Int: UInt8] = [6: 0x40, 8: 0x80], fixedZeros: [Int: UInt8] = [6: 0xB0, 8: 0x40]
        for index in 0..<16 {
            #expect(ones[index] == 0xFF & ~(fixedZeros[index] ?? 0), "byte \(index)")
            #expect(zeros[index] == 0xFF & ~(fixedOnes[index] ?? 0), "byte \(index)")
        }
    }

    @Test func malformedTextIsRefusedAsFoundationRefusesIt() {
        let samples = [
            "", "0b89c48c5b66400c8ca21cb0c6bc4b4e", "0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4",
            "0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4ef",
            "0b89c48c-5b66-400c-8ca2_1cb0c6bc4b4e", "gb89c48c-5b66-400c-8ca2-1cb0c6bc4b4e",
            "0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4é",
            " 0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4e", "{0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4e}",
            "0b89c48c-5b66-400c-8ca21-cb0c6bc4b4e",
        ]
        for sample in samples {
            #expect(UUID(text: sample) == nil, "\(sample)")
            #expect(UUID(uuidString: sample) == nil, "Foundation accepts \(sample)")
        }
    }
}
