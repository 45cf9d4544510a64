import Foundation
import PierAppAssociation
import PierCrypto
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import Gateway

/// The files iOS and Android read from the domain before they open a mailed link in the app or
/// offer a passkey: served by the gateway at the root, as JSON, never through a redirect, in the
/// shapes Apple ("Supporting associated domains") and Google (Digital Asset Links) document.
@Suite struct AppAssociationTests {
    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let settings = [
        "PIER_APPLE_APP_IDS": "ABCDE12345.com.example.notes, ABCDE12345.com.example.notes.beta",
        "PIER_ANDROID_PACKAGE": "com.example.notes",
        // As keytool prints it, and as lower-case digits without colons.
        "PIER_ANDROID_CERT_SHA256": fingerprint + ", " + fingerprint.replacingOccurrences(of: ":", with: "").lowercased(),
    ]

    /// Through a gateway that proxies auth to another server: the files come from the gateway,
    /// the mailed links' pages still from auth.
    @Test func theFilesAreServedAsAppleAndGoogleDocumentThem() async throws {
        let auth = try await EmbeddedStack.start(
            databaseURL: try await TestDatabase.create("pier_test_association"), plugins: ["auth"])
        let gateway = try await EmbeddedStack.proxy(["/auth=http://127.0.0.1:\(auth.server.port)"], settings: Self.settings)
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")

        let apple = try await client.send("GET", "/.well-known/apple-app-site-association")
        #expect(apple.status == 200 && apple.headers["Content-Type"] == "application/json")
        #expect(apple.headers["Location"] == nil)
        let file = try #require(try JSONSerialization.jsonObject(with: Data(apple.body)) as? [String: Any])
        let links = try #require(file["applinks"] as? [String: Any])
        let details = try #require(links["details"] as? [[String: Any]])
        #expect(details.count == 1)
        let apps = ["ABCDE12345.com.example.notes", "ABCDE12345.com.example.notes.beta"]
        #expect(details[0]["appIDs"] as? [String] == apps)
        let components = try #require(details[0]["components"] as? [[String: Any]])
        #expect(components.compactMap { $0["/"] as? String } == AppAssociation.linkPaths)
        #expect(components.allSatisfy { ($0["?"] as? [String: String]) == ["token": "?*"] })
        #expect((file["webcredentials"] as? [String: [String]])?["apps"] == apps)

        let android = try await client.send("GET", "/.well-known/assetlinks.json")
        #expect(android.status == 200 && android.headers["Content-Type"] == "application/json")
        let statements = try #require(try JSONSerialization.jsonObject(with: Data(android.body)) as? [[String: Any]])
        #expect(statements.count == 1)
        #expect(
            Set(statements[0]["relation"] as? [String] ?? [])
                == ["delegate_permission/common.handle_all_urls", "delegate_permission/common.get_login_creds"])
        let target = try #require(statements[0]["target"] as? [String: Any])
        #expect(target["namespace"] as? String == "android_app" && target["package_name"] as? String == "com.example.notes")
        #expect(target["sha256_cert_fingerprints"] as? [String] == [Self.fingerprint, Self.fingerprint])

        // Without the app, the link still opens auth's page in the browser.
        let page = try await client.send("GET", "/auth/email/verify?token=abc")
        #expect(page.status == 200 && page.headers["Content-Type"]?.hasPrefix("text/html") == true)
        #expect(page.text.contains("action=\"/auth/email/verify\""))

        await gateway.shutdown()
        await auth.shutdown()
    }

    @Test func withoutAnAppTheFilesAreNotFound() async throws {
        let gateway = try await EmbeddedStack.proxy([])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        for (path, setting) in [
            ("/.well-known/apple-app-site-association", "PIER_APPLE_APP_IDS"),
            ("/.well-known/assetlinks.json", "PIER_ANDROID_PACKAGE"),
        ] {
            let missing = try await client.send("GET", path)
            #expect(missing.status == 404 && missing.problem?.detail?.contains(setting) == true, "\(path): \(missing.text)")
        }
        await gateway.shutdown()
    }

    @Test func badSettingsStopTheStart() {
        let refused: [([String: String], String)] = [
            (["PIER_APPLE_APP_IDS": "com.example.notes"], "PIER_APPLE_APP_IDS"),
            (["PIER_APPLE_APP_IDS": "abcde12345.com.example.notes"], "PIER_APPLE_APP_IDS"),
            (["PIER_APPLE_APP_IDS": "ABCDE12345."], "PIER_APPLE_APP_IDS"),
            (["PIER_APPLE_APP_IDS": "ABCDE12345.com/example"], "PIER_APPLE_APP_IDS"),
            (["PIER_ANDROID_PACKAGE": "notes", "PIER_ANDROID_CERT_SHA256": Self.fingerprint], "PIER_ANDROID_PACKAGE"),
            (["PIER_ANDROID_PACKAGE": "com.1example", "PIER_ANDROID_CERT_SHA256": Self.fingerprint], "PIER_ANDROID_PACKAGE"),
            (["PIER_ANDROID_PACKAGE": "com.example.notes", "PIER_ANDROID_CERT_SHA256": "14:6D"], "PIER_ANDROID_CERT_SHA256"),
            (
                ["PIER_ANDROID_PACKAGE": "com.example.notes", "PIER_ANDROID_CERT_SHA256": String(repeating: "zz", count: 32)],
                "PIER_ANDROID_CERT_SHA256"
            ),
            (["PIER_ANDROID_PACKAGE": "com.example.notes"], "PIER_ANDROID_CERT_SHA256"),
            (["PIER_ANDROID_CERT_SHA256": Self.fingerprint], "PIER_ANDROID_PACKAGE"),
        ]
        for (values, variable) in refused {
            do {
                _ = try AppAssociation(environment: Environment(values))
                Issue.record("accepted \(values)")
            } catch {
                #expect(error.variable == variable, "\(values): \(error)")
            }
        }
    }

    /// An Android app's passkey ceremonies carry its signing certificate's digest as origin.
    @Test func androidOriginsAreTheCertificatesDigests() throws {
        let association = try AppAssociation(environment: Environment(Self.settings))
        let hex = Array(Self.fingerprint.replacingOccurrences(of: ":", with: "").utf8)
        let digest = stride(from: 0, to: hex.count, by: 2).map {
            UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
        #expect(association.androidCertificates == [digest, digest])
        #expect(association.androidOrigins == Array(repeating: "android:apk-key-hash:" + Base64.urlEncoded(digest), count: 2))
        #expect(!association.androidOrigins[0].contains("=") && association.androidOrigins[0].count == 21 + 43)
    }
}
