import CQREncode

/// A QR code (ISO/IEC 18004) drawn by libqrencode, as an SVG image: what an authenticator app
/// scans to take an `otpauth://` URI.
public struct QRCode: Sendable, Equatable {
    /// The modules, row by row: true where a module is dark.
    public let modules: [[Bool]]

    /// `text` in byte mode at error-correction level M; nil when it does not fit a QR code
    /// (about 2,300 bytes at that level) or holds a NUL.
    public init?(_ text: String) {
        guard !text.utf8.contains(0), let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        // The lowest bit of each byte is the module's colour; the others say what it is part of.
        modules = (0..<width).map { row in (0..<width).map { column in data[row * width + column] & 1 == 1 } }
    }

    /// The code as an SVG document: one path of unit squares, the four-module quiet zone the
    /// standard asks for around it, scaled by whoever shows it.
    public var svg: String {
        let size = modules.count + 8
        var path = ""
        for (row, line) in modules.enumerated() {
            var column = 0
            while column < line.count {
                guard line[column] else {
                    column += 1
                    continue
                }
                var run = 1
                while column + run < line.count, line[column + run] { run += 1 }
                path += "M\(column + 4) \(row + 4)h\(run)v1h-\(run)z"
                column += run
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(size) \(size)" shape-rendering="crispEdges">\
            <rect width="\(size)" height="\(size)" fill="#fff"/><path fill="#000" d="\(path)"/></svg>
            """
    }
}
