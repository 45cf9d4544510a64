import PierCrypto
import PierJSON
import PierService

/// The apps that speak for this server's domain, from settings: what iOS reads before it opens a
/// mailed link in the app (universal links) or offers a passkey for the domain
/// (`/.well-known/apple-app-site-association`), and what Android reads for the same two
/// (`/.well-known/assetlinks.json`).
///
/// The variables and their defaults are declared with the gateway's (docs/settings.md).
public struct AppAssociation: Sendable, Equatable {
    public var appleAppIDs: [String]
    public var androidPackage: String?
    /// The SHA-256 digests of the Android app's signing certificates.
    public var androidCertificates: [[UInt8]]

    /// The paths of the links Pier mails: opened in the app when it is installed (it hands the
    /// URL to PierClient's `MailedLink`), in the browser's pages otherwise.
    public static let linkPaths = [
        "/auth/email/verify", "/auth/password/reset", "/auth/email/change/confirm", "/auth/email/change/cancel",
    ]

    public init(appleAppIDs: [String] = [], androidPackage: String? = nil, androidCertificates: [[UInt8]] = []) {
        self.appleAppIDs = appleAppIDs
        self.androidPackage = androidPackage
        self.androidCertificates = androidCertificates
    }

    public init(environment: Environment) throws(Environment.Failure) {
        appleAppIDs = environment.list("PIER_APPLE_APP_IDS")
        for id in appleAppIDs where !Self.isAppleAppID(id) {
            throw Environment.Failure(
                variable: "PIER_APPLE_APP_IDS",
                problem: "\"\(id)\" is not TEAMID.bundle.id (a ten-character team id, a dot, the bundle id)")
        }
        androidPackage = environment.string("PIER_ANDROID_PACKAGE")
        if let package = androidPackage, !Self.isAndroidPackage(package) {
            throw Environment.Failure(
                variable: "PIER_ANDROID_PACKAGE", problem: "\"\(package)\" is not a package name (com.example.app)")
        }
        androidCertificates = []
        for fingerprint in environment.list("PIER_ANDROID_CERT_SHA256") {
            guard let digest = Self.fingerprint(fingerprint) else {
                throw Environment.Failure(
                    variable: "PIER_ANDROID_CERT_SHA256",
                    problem: "\"\(fingerprint)\" is not a SHA-256 fingerprint (64 hex digits)")
            }
            androidCertificates.append(digest)
        }
        if (androidPackage == nil) != androidCertificates.isEmpty {
            throw Environment.Failure(
                variable: androidPackage == nil ? "PIER_ANDROID_PACKAGE" : "PIER_ANDROID_CERT_SHA256",
                problem: "PIER_ANDROID_PACKAGE and PIER_ANDROID_CERT_SHA256 are set together")
        }
    }

    /// `/.well-known/apple-app-site-association`: universal links for the mailed paths (with
    /// their token) and the web credentials of passkeys; nil without an iOS app.
    public var appleFile: [UInt8]? {
        guard !appleAppIDs.isEmpty else { return nil }
        struct File: Encodable {
            struct Links: Encodable { let details: [Detail] }
            struct Detail: Encodable {
                let appIDs: [String]
                let components: [Component]
            }
            struct Component: Encodable {
                let path: String
                let query = ["token": "?*"]
                let comment: String
                enum CodingKeys: String, CodingKey {
                    case path = "/"
                    case query = "?"
                    case comment
                }
            }
            struct Credentials: Encodable { let apps: [String] }
            let applinks: Links
            let webcredentials: Credentials
        }
        let components = Self.linkPaths.map { File.Component(path: $0, comment: "a link Pier mails") }
        return try? JSON.encode(
            File(
                applinks: .init(details: [.init(appIDs: appleAppIDs, components: components)]),
                webcredentials: .init(apps: appleAppIDs)))
    }

    /// `/.well-known/assetlinks.json`: the Android app may open this domain's links and use its
    /// credentials (passkeys); nil without an Android app.
    public var androidFile: [UInt8]? {
        guard let androidPackage, !androidCertificates.isEmpty else { return nil }
        struct Statement: Encodable {
            struct Target: Encodable {
                let namespace = "android_app"
                let packageName: String
                let sha256CertFingerprints: [String]
                enum CodingKeys: String, CodingKey {
                    case namespace
                    case packageName = "package_name"
                    case sha256CertFingerprints = "sha256_cert_fingerprints"
                }
            }
            let relation = ["delegate_permission/common.handle_all_urls", "delegate_permission/common.get_login_creds"]
            let target: Target
        }
        let fingerprints = androidCertificates.map { digest in
            digest.map { byte in
                let hex = String(byte, radix: 16, uppercase: true)
                return byte < 16 ? "0" + hex : hex
            }.joined(separator: ":")
        }
        return try? JSON.encode([
            Statement(target: .init(packageName: androidPackage, sha256CertFingerprints: fingerprints))
        ])
    }

    /// The origins an Android app's passkey ceremonies carry (`android:apk-key-hash:` and the
    /// certificate's digest in base64url).
    public var androidOrigins: [String] {
        androidCertificates.map { "android:apk-key-hash:" + Base64.urlEncoded($0) }
    }

    static func isAppleAppID(_ id: String) -> Bool {
        let parts = id.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count == 10,
            parts[0].utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }),
            !parts[1].isEmpty, parts[1].utf8.count <= 155, !parts[1].hasPrefix("."), !parts[1].hasSuffix(".")
        else { return false }
        return parts[1].utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    static func isAndroidPackage(_ name: String) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        return segments.count >= 2 && name.utf8.count <= 255
            && segments.allSatisfy { segment in
                guard let first = segment.utf8.first, isLetter(first) else { return false }
                return segment.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") }
            }
    }

    /// 32 bytes from 64 hex digits, with or without colons between the bytes.
    static func fingerprint(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8.filter { $0 != UInt8(ascii: ":") })
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || (0x30...0x39).contains(byte) }
}
