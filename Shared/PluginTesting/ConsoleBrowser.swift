import PierHTTP
import PierModels
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The console as a team member's browser uses it: signed in with the sign-in form, its cookie
/// kept, every form posted with the page's CSRF token and the console's own origin (what the
/// console checks before a plugin's page sees a form). `TestPier.console(email:)` makes one.
public final class ConsoleBrowser: Sendable {
    /// A page as the browser got it.
    public struct Page: Sendable {
        public let status: Int
        /// Where a redirect leads (`Location`), if it is one.
        public let location: String?
        public let html: String
    }

    private let base: String
    private let client: HTTPClient
    private let cookies = Mutex<[String: String]>([:])
    private let csrf = Mutex<String?>(nil)

    init(base: String, client: HTTPClient) {
        self.base = base
        self.client = client
    }

    /// Signs in with the console's form (no second factor: the kit's stack asks none).
    func signIn(email: String, password: String) async throws {
        let form = try await get("/console/sign-in")
        guard let nonce = Self.value(of: "form", in: form.html) else { throw TestPierError("the sign-in page has no form") }
        let signed = try await post(
            "/console/sign-in", form: [("form", nonce), ("email", email), ("password", password), ("next", "")])
        guard signed.status == 303 else { throw TestPierError("signing in to the console as \(email) answered \(signed.status)") }
    }

    /// GET `path` (`/console/leaderboard?game=chess`).
    public func get(_ path: String) async throws -> Page {
        let page = try await send("GET", path, body: nil)
        if let token = Self.value(of: "csrf", in: page.html) { csrf.withLock { $0 = token } }
        return page
    }

    /// POST `form` to `path`, with the CSRF token of the last page read.
    public func post(_ path: String, form: [(String, String)]) async throws -> Page {
        let fields = form + (csrf.withLock { $0 }.map { [("csrf", $0)] } ?? [])
        let body = fields.map { PercentEncoding.component($0.0) + "=" + PercentEncoding.component($0.1) }.joined(separator: "&")
        return try await send("POST", path, body: Array(body.utf8))
    }

    private func send(_ method: String, _ path: String, body: [UInt8]?) async throws -> Page {
        var headers: HTTPHeaders = ["Origin": base]
        let jar = cookies.withLock { $0 }
        if !jar.isEmpty { headers.set("Cookie", jar.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")) }
        if body != nil { headers.set("Content-Type", "application/x-www-form-urlencoded") }
        let response = try await client.send(method, base + path, headers: headers, body: body, timeout: .seconds(30))
        for field in response.headers where field.name.lowercased() == "set-cookie" {
            let pair = field.value.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1)
            if pair.count == 2 { cookies.withLock { $0[String(pair[0])] = String(pair[1]) } }
        }
        return Page(
            status: response.status, location: response.headers["Location"], html: String(decoding: response.body, as: UTF8.self))
    }

    /// The value of the first hidden field named `name` in `html`.
    static func value(of name: String, in html: String) -> String? {
        guard let field = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return html[field.upperBound...].split(separator: "\"", maxSplits: 1).first.map(String.init)
    }
}
