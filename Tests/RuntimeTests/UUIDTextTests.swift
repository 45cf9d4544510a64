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
