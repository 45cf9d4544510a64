#if canImport(Glibc)
    import Glibc
#endif

/// A file could not be read or written; the description names it and says why.
public struct FileError: Error, CustomStringConvertible {
    public let description: String
}

/// The whole file as UTF-8 text.
public func readFile(_ path: String) throws -> String {
    guard let file = fopen(path, "r") else {
        throw FileError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
    }
    defer { fclose(file) }
    var bytes = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Writes a secret file readable by its owner only.
public func writeFile(_ path: String, _ text: String) throws {
    if let slash = path.lastIndex(of: "/") { mkdir(String(path[..<slash]), 0o700) }
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw FileError(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var text = text
    let written = text.withUTF8 { write(fd, $0.baseAddress, $0.count) }
    guard written == text.utf8.count else { throw FileError(description: "cannot write \(path)") }
}
