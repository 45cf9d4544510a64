import PierQR
import Testing

/// libqrencode's symbols as Pier draws them: sizes and finder patterns as ISO/IEC 18004 has
/// them, and an SVG that draws exactly the dark modules.
struct QRCodeTests {
    static let uri =
        "otpauth://totp/Seeds:anna%40example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Seeds&algorithm=SHA1&digits=6&period=30"

    @Test func aSymbolHasItsSizeAndFinderPatterns() throws {
        let code = try #require(QRCode(Self.uri))
        let size = code.modules.count
        #expect((size - 17) % 4 == 0 && size > 21, "a version's size is 17 + 4 × version")
        #expect(code.modules.allSatisfy { $0.count == size })
        // The three finder patterns: a dark 7 × 7 ring around a light ring around a dark 3 × 3.
        for (top, left) in [(0, 0), (0, size - 7), (size - 7, 0)] {
            for row in 0..<7 {
                for column in 0..<7 {
                    let ring = max(abs(row - 3), abs(column - 3))
                    #expect(code.modules[top + row][left + column] == (ring != 2), "finder at \(top),\(left)")
                }
            }
        }
    }

    @Test func theSVGDrawsEveryDarkModuleInsideAQuietZone() throws {
        let code = try #require(QRCode(Self.uri))
        let svg = code.svg
        let size = code.modules.count + 8
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(size) \(size)\""))
        // Every run of dark modules is one rectangle: their widths add up to the dark modules.
        let widths = svg.split(separator: "h").dropFirst().compactMap { Int($0.prefix { $0.isNumber }) }
        #expect(widths.reduce(0, +) == code.modules.joined().filter { $0 }.count)
        #expect(!svg.contains("M0 ") && !svg.contains("M1 ") && !svg.contains("M2 ") && !svg.contains("M3 "))
    }

    @Test func textThatCannotBeASymbolIsRefused() {
        #expect(QRCode(String(repeating: "x", count: 4000)) == nil)
        #expect(QRCode("a\u{0}b") == nil)
    }
}
