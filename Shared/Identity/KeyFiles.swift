import PierCrypto
import PierRuntime

extension P256PrivateKey {
    /// The key in `file` when one is set; else (development) the one kept at `generated`, made
    /// there on first use, with a warning that names `setting`.
    public static func configured(file: String?, orGeneratedAt generated: String, setting: String, logger: Logger)
        throws -> P256PrivateKey
    {
        if let file { return try P256PrivateKey(pem: try readFile(file)) }
        if let pem = try? readFile(generated) { return try P256PrivateKey(pem: pem) }
        let key = try P256PrivateKey.generate()
        try writeFile(generated, try key.pemRepresentation())
        logger.warning("generated a development key; set \(setting) in production", [("path", .string(generated))])
        return key
    }
}
