import PierCBOR
import PierCrypto
import Testing

/// CBOR as libcbor reads it and Pier writes it: RFC 8949's appendix A examples, what WebAuthn
/// refuses (indefinite lengths, trailing bytes, deep nesting), and random input that must never
/// crash the reader.
struct CBORTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// RFC 8949 appendix A, both ways (each is in preferred serialization).
    @Test func theRFCExamplesReadAndWrite() throws {
        let examples: [(String, CBOR)] = [
            ("00", CBOR(0)), ("17", CBOR(23)), ("1818", CBOR(24)), ("1903e8", CBOR(1000)), ("1a000f4240", CBOR(1_000_000)),
            ("1b000000e8d4a51000", CBOR(1_000_000_000_000)), ("1bffffffffffffffff", .unsigned(UInt64.max)),
            ("20", CBOR(-1)), ("3863", CBOR(-100)), ("3903e7", CBOR(-1000)), ("3bffffffffffffffff", .negative(UInt64.max)),
            ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null), ("f7", .undefined),
            ("fb3ff199999999999a", .float(1.1)), ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])),
            ("60", .text("")), ("6449455446", .text("IETF")), ("62c3bc", .text("ü")), ("80", .array([])),
            ("83010203", .array([CBOR(1), CBOR(2), CBOR(3)])), ("a0", .map([])),
            ("a201020304", .map([.init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(4))])),
            ("a26161016162820203", .map([.init(.text("a"), CBOR(1)), .init(.text("b"), .array([CBOR(2), CBOR(3)]))])),
            ("c11a514b67b0", .tagged(1, CBOR(1_363_896_240))),
        ]
        for (encoded, item) in examples {
            #expect(try CBOR.decode(Self.hex(encoded)) == item, "\(encoded)")
            #expect(item.encoded == Self.hex(encoded), "\(encoded)")
        }
        // Shorter float forms read as their value.
        #expect(try CBOR.decode(Self.hex("f93c00")) == .float(1.0))
        #expect(try CBOR.decode(Self.hex("fa47c35000")) == .float(100_000.0))
    }

    @Test func whatWebAuthnDoesNotSendIsRefused() {
        for (encoded, why) in [
            ("5f42010243030405ff", "an indefinite byte string"), ("7f657374726561646d696e67ff", "an indefinite text string"),
            ("9f018202039f0405ffff", "an indefinite array"), ("bf61610161629f0203ffff", "an indefinite map"),
            ("0001", "trailing bytes"), ("", "nothing"), ("1a0000", "a cut head"), ("62c3", "a cut string"),
            ("62c328", "text that is not UTF-8"), ("f8ff", "an unassigned simple value"), ("1c", "a reserved head"),
            // Heads declaring more than the input holds (libcbor would make room for them first).
            ("9b0000010000000000", "2^40 array elements"), ("bb4000000000000000", "2^62 map pairs"),
            ("5bffffffffffffffff01", "a 2^64-byte string"), ("8201", "an array shorter than declared"),
        ] {
            #expect(throws: CBOR.Failure.self, "\(why)") { try CBOR.decode(Self.hex(encoded)) }
        }
        let deep = [UInt8](repeating: 0x81, count: 40) + [0x00]
        #expect(throws: CBOR.Failure.self) { try CBOR.decode(deep) }
        let fine = [UInt8](repeating: 0x81, count: 10) + [0x00]
        #expect(throws: Never.self) { try CBOR.decode(fine) }
    }

    /// A prefix and its length: an attested credential's key is followed by more data.
    @Test func aPrefixSaysHowLongItIs() throws {
        let (item, length) = try CBOR.decodePrefix(Self.hex("a201020304") + [0xde, 0xad])
        #expect(length == 5 && item[1] == CBOR(2) && item[3]?.int == 4 && item[5] == nil)
    }

    /// Random bytes, and valid items with bytes flipped, cut or inserted: an answer or a
    /// failure every time, never a crash.
    @Test func randomInputNeverCrashesTheReader() {
        var generator = SystemRandomNumberGenerator()
        let valid = CBOR.map([
            .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map([])),
            .init(.text("authData"), .bytes(SecureRandom.bytes(180))),
            .init(CBOR(-2), .array([CBOR(-7), .bytes(SecureRandom.bytes(32)), .tagged(24, .bytes([1]))])),
        ]).encoded
        var read = 0
        for round in 0..<20_000 {
            var input: [UInt8]
            switch round % 4 {
            case 0: input = SecureRandom.bytes(Int.random(in: 1...64, using: &generator))
            case 1:
                input = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    input[Int.random(in: 0..<input.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            case 2: input = Array(valid.prefix(Int.random(in: 1..<valid.count, using: &generator)))
            default:
                input = valid
                input.insert(contentsOf: SecureRandom.bytes(3), at: Int.random(in: 0..<input.count, using: &generator))
            }
            if (try? CBOR.decodePrefix(input)) != nil { read += 1 }
        }
        #expect(read > 0 && read < 20_000)
    }
}
