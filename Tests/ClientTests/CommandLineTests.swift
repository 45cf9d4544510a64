import Foundation
import PierClient
import PierCrypto
import PierModels
import PierPostgres
import PierTestSupport
import Testing

/// The `pier` executable, run as a person or a script runs it, against the whole stack.
@Suite struct CommandLineTests {
    struct Outcome {
        let status: Int32
        let output: String
        let errors: String
    }

    /// The binary `swift build` made next to the test bundle.
    static let binary: URL = {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("pier")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/pier")
            .standardized
    }()

    /// Runs `pier arguments` with its own config directory; `PIER_PASSWORD` when given. The wait
    /// is on a thread of its own: the server the command talks to answers on the cooperative
    /// pool of this very process, which a blocked wait there could starve.
    static func pier(
        _ arguments: [String], home: URL, url: String, password: String? = nil, path: String = "/usr/bin:/bin"
    ) async throws -> Outcome {
        try await onOwnThread { try run(arguments, home: home, url: url, password: password, path: path) }
    }

    private static func run(_ arguments: [String], home: URL, url: String, password: String?, path: String) throws -> Outcome {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var environment = ["XDG_CONFIG_HOME": home.path, "PIER_URL": url, "PATH": path]
        if let password { environment["PIER_PASSWORD"] = password }
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self))
    }

    /// A command pier does not have runs the plugin's own `pier-NAME` (on `PATH`) with the same
    /// arguments and environment; pier's own commands are never replaced, a path never run.
    @Test func aPluginsCommandLineRunsAsPierName() async throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let bin = home.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        for (name, script) in [
            ("pier-hello", "#!/bin/sh\necho \"hello $*\"\necho \"url $PIER_URL\"\nexit 7\n"),
            ("pier-plans", "#!/bin/sh\necho hijacked\n"),
        ] {
            let file = bin.appendingPathComponent(name)
            try Data(script.utf8).write(to: file)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
        }
        let path = bin.path + ":/usr/bin:/bin"
        let url = "http://127.0.0.1:9"
        let ran = try await Self.pier(["hello", "--platform", "ios", "a b"], home: home, url: url, path: path)
        #expect(ran.status == 7 && ran.output == "hello --platform ios a b\nurl \(url)\n", "\(ran)")
        let unknown = try await Self.pier(["goodbye"], home: home, url: url, path: path)
        #expect(unknown.status == 2 && unknown.errors.contains("unknown command \"goodbye\""), "\(unknown)")
        let own = try await Self.pier(["plans"], home: home, url: url, path: path)
        #expect(own.status == 6 && !own.output.contains("hijacked"), "pier's own command ran: \(own)")
        let escaped = try await Self.pier(["../bin/pier-hello"], home: home, url: url, path: path)
        #expect(escaped.status == 2 && !escaped.output.contains("hello"), "\(escaped)")
    }

    /// Two-step sign-in from a script: enrol, confirm the app's code, sign in with a code, turn
    /// it off with a recovery code.
    @Test func twoStepSignInFromAScript() async throws {
        let url = "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)"
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let email = PierClientTests.email()
        let secret = "a terminal passphrase"
        func pier(_ arguments: String..., password: String? = nil) async throws -> Outcome {
            try await Self.pier(arguments, home: home, url: url, password: password)
        }
        #expect(try await pier("register", email, password: secret).status == 0)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await PierClientTests.stack.value.1, poolSize: 1))
        defer { pool.close() }
        try await pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
        #expect(try await pier("mfa").output.contains("off"))
        let qr = home.appendingPathComponent("qr.svg").path
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let enrolled = try await pier("mfa", "enrol", "--json", "--qr", qr)
        #expect(enrolled.status == 0, "\(enrolled.errors)")
        let setup = try JSONDecoder().decode(TOTPEnrolment.self, from: Data(enrolled.output.utf8))
        #expect(String(decoding: try #require(FileManager.default.contents(atPath: qr)), as: UTF8.self) == setup.qrCode)
        let totp = TOTP(secret: try #require(Base32.decode(setup.secret)))
        let step = TOTP.step(at: Int(Date().timeIntervalSince1970))
        #expect(try await pier("mfa", "confirm", "000000").status == 5)
        let confirmed = try await pier("mfa", "confirm", totp.code(step: step))
        #expect(confirmed.status == 0 && confirmed.output.contains("recovery codes"), "\(confirmed.errors)")
        let recovery = confirmed.output.split(separator: "\n").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(recovery.count == 10)
        #expect(try await pier("logout").status == 0)
        let noCode = try await pier("login", email, password: secret)
        #expect(noCode.status == 2 && noCode.errors.contains("--code"), "\(noCode)")
        let wrong = try await pier("login", email, "--code", "000000", password: secret)
        #expect(wrong.status == 3 && wrong.errors.contains("invalid_code"), "\(wrong)")
        let signedIn = try await pier("login", email, "--code", totp.code(step: step + 1), password: secret)
        #expect(signedIn.status == 0 && signedIn.output.contains("Signed in as \(email)"), "\(signedIn)")
        #expect(try await pier("mfa").output.contains("10 recovery codes left"))
        // Passkeys are added on a device; the terminal lists them.
        let passkeys = try await pier("passkeys")
        #expect(passkeys.status == 0 && passkeys.output.contains("last used"), "\(passkeys)")
        #expect(try await pier("passkeys", "rename", UUID().uuidString, "x").status == 4)
        #expect(try await pier("passkeys", "frob").status == 2)
        let off = try await pier("mfa", "disable", "--code", recovery[2])
        #expect(off.status == 0, "\(off)")
        #expect(try await pier("mfa").output.contains("off"))
    }

    /// Starting without signing up from a terminal: the anonymous account sends feedback, is
    /// told its address is taken, and merges into that account with its password.
    @Test func startWithoutSigningUpThenMergeFromTheTerminal() async throws {
        let url = "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)"
        let owner = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let device = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let email = PierClientTests.email()
        let secret = "a terminal passphrase"
        #expect(try await Self.pier(["register", email], home: owner, url: url, password: secret).status == 0)
        func pier(_ arguments: String..., password: String? = nil) async throws -> Outcome {
            try await Self.pier(arguments, home: device, url: url, password: password)
        }
        #expect(try await pier("anonymous", "--help").output.contains("start without signing up"))
        let started = try await pier("anonymous")
        #expect(started.status == 0 && started.output.hasPrefix("Signed in as anonymous "), "\(started)")
        let handle = String(try #require(started.output.split(separator: " (").first).dropFirst("Signed in as ".count))
        #expect(try await pier("whoami").output.contains(handle))
        #expect(try await pier("feedback", "send", "Sent before signing up").status == 0)

        let taken = try await pier("keep", email, password: secret)
        #expect(taken.status == 5 && taken.errors.contains("pier merge \(email)"), "\(taken)")
        let wrong = try await pier("merge", email, password: "not the passphrase")
        #expect(wrong.status == 3 && wrong.errors.contains("invalid_credentials"), "\(wrong)")
        #expect(try await pier("whoami").output.contains(handle))  // still anonymous here
        let merged = try await pier("merge", email, password: secret)
        #expect(merged.status == 0 && merged.output.contains("Merged"), "\(merged)")
        #expect(try await pier("whoami").output.contains(email))

        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await PierClientTests.stack.value.1, poolSize: 1))
        defer { pool.close() }
        #expect(
            await eventually {
                let rows = try? await pool.query(
                    """
                    SELECT count(*)::int AS n FROM feedback.items i JOIN auth.users u ON u.id = i.user_id
                    WHERE u.email = \(email) AND i.message = 'Sent before signing up'
                    """)
                return (try? rows?.first?.decode("n", as: Int.self)) == 1
            })
    }

    /// Addresses holding what a query reads otherwise ("+" as a space, "&" and "=" as separators,
    /// "%" as an escape) and letters beyond ASCII: found, granted and shown by address, through
    /// the command line and PierAdmin alike (PierClient encodes query components per RFC 3986).
    @Test func addressesWithQueryCharactersAreFoundByAddress() async throws {
        let url = "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)"
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let secret = "a terminal passphrase"
        func pier(_ arguments: String..., password: String? = nil) async throws -> Outcome {
            try await Self.pier(arguments, home: home, url: url, password: password)
        }
        let admin = PierClientTests.email()
        #expect(try await pier("register", admin, password: secret).status == 0)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await PierClientTests.stack.value.1, poolSize: 1))
        defer { pool.close() }
        try await pool.execute("UPDATE auth.users SET role = 'admin', email_verified_at = now() WHERE email = \(admin)")
        #expect(try await pier("login", admin, password: secret).status == 0)
        let plan = "cli-\(UUID().uuidString.prefix(6).lowercased())"
        #expect(
            try await pier(
                "admin", "plans", "create", plan, "--name", "Plus", "--price", "99", "--currency", "USD", "--period", "P1M",
                "--entitlements", "plus"
            ).status == 0)
        let tag = UUID().uuidString.prefix(6).lowercased()
        let client = PierClient(baseURL: URL(string: url)!, sessionStore: MemorySessionStore(), options: PierClientTests.fast)
        _ = try await client.auth.login(email: admin, password: secret)
        for local in ["a+b", "a&b=c", "100%25", "zoë.ñ", "a+b&c=d%e"] {
            let address = "\(local)-\(tag)@example.com"
            let owner = home.appendingPathComponent(UUID().uuidString)
            let registered = try await Self.pier(["register", address], home: owner, url: url, password: secret)
            #expect(registered.status == 0, "\(address): \(registered.errors)")
            let shown = try await pier("admin", "user", address)
            #expect(shown.status == 0 && shown.output.contains(address), "\(address): \(shown)")
            let listed = try await pier("admin", "users", address)
            #expect(listed.status == 0 && listed.output.contains(address), "\(address): \(listed)")
            let granted = try await pier("admin", "grant", address, plan, "--duration", "P1M", "--reason", "support")
            #expect(granted.status == 0, "\(address): \(granted)")
            let found = try await client.admin.user(named: address)
            #expect(found.email == address)
            #expect(try await client.admin.users(matching: address).items.map(\.email) == [address])
        }
    }

    /// CPU seconds (user and system) process `pid` has used, from /proc.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command's name (in parentheses, which may hold spaces): utime is the 14th.
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// An idle live stream costs its device next to nothing: `pier status --watch` (PierClient's
    /// `subscriptions.updates`) held open for 10 s with nothing happening uses under 1 % of a core
    /// (it used 98 % on Linux, URLSession spinning on the idle connection), and a change still
    /// reaches it at once. (The window was 60 s, and this test the last of the suites to end:
    /// 1 % of 10 s is 10 clock ticks, ample to tell a spinning client from a waiting one.)
    @Test func anIdleLiveStreamCostsNextToNothing() async throws {
        let url = "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)"
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let email = PierClientTests.email()
        let secret = "a terminal passphrase"
        #expect(try await Self.pier(["register", email], home: home, url: url, password: secret).status == 0)
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["status", "--watch", "--json"]
        process.environment = ["XDG_CONFIG_HOME": home.path, "PIER_URL": url, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let lines = Locked<[String]>([])
        Thread.detachNewThread {
            var text = ""
            while case let data = output.fileHandleForReading.availableData, !data.isEmpty {
                text += String(decoding: data, as: UTF8.self)
                while let end = text.firstIndex(of: "\n") {
                    let line = String(text[..<end])
                    lines.withLock { $0.append(line) }
                    text = String(text[text.index(after: end)...])
                }
            }
        }
        #expect(await eventually { lines.withLock { $0.count } == 1 })
        let before = try Self.cpuSeconds(process.processIdentifier)
        let started = ContinuousClock.now
        try await Task.sleep(for: .seconds(10))
        let used = try Self.cpuSeconds(process.processIdentifier) - before
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        let share = used / (Double(seconds) + Double(attoseconds) / 1e18)
        print("an idle live stream: \(used) s of CPU in 10 s, \(share * 100) % of a core")
        #expect(share < 0.01, "an idle live stream used \(share * 100) % of a core")

        // Still live: a grant reaches the watching client.
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await PierClientTests.stack.value.1, poolSize: 1))
        defer { pool.close() }
        let user = try await pool.query("SELECT id FROM auth.users WHERE email = \(email)")[0].decode("id", as: UUID.self)
        let admin = home.appendingPathComponent("admin")
        let adminEmail = PierClientTests.email()
        #expect(try await Self.pier(["register", adminEmail], home: admin, url: url, password: secret).status == 0)
        try await pool.execute("UPDATE auth.users SET role = 'admin', email_verified_at = now() WHERE email = \(adminEmail)")
        #expect(try await Self.pier(["login", adminEmail], home: admin, url: url, password: secret).status == 0)
        let plan = "idle-\(UUID().uuidString.prefix(6).lowercased())"
        #expect(
            try await Self.pier(
                [
                    "admin", "plans", "create", plan, "--name", "Idle", "--price", "99", "--currency", "USD", "--period", "P1M",
                    "--entitlements", "idle",
                ],
                home: admin, url: url
            ).status == 0)
        let granted = try await Self.pier(
            ["admin", "grant", user.uuidString.lowercased(), plan, "--duration", "P1M", "--reason", "test"], home: admin,
            url: url)
        #expect(granted.status == 0, "\(granted)")
        #expect(await eventually { lines.withLock { $0.count } >= 2 })
        #expect(lines.withLock { $0.last ?? "" }.contains(#""status":"active""#), "\(lines.withLock { $0 })")
    }

    @Test func aPersonAndAScriptUseIt() async throws {
        let url = "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)"
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let email = PierClientTests.email()
        let secret = "a terminal passphrase"
        func pier(_ arguments: String..., password: String? = nil) async throws -> Outcome {
            try await Self.pier(arguments, home: home, url: url, password: password)
        }

        #expect(try await pier("--help").output.contains("admin feedback export"))
        // Help for one command: its lines and the options, not the whole list.
        let sendHelp = try await pier("feedback", "send", "--help")
        #expect(
            sendHelp.status == 0 && sendHelp.output.contains("feedback send MESSAGE") && !sendHelp.output.contains("admin plans"))
        #expect(sendHelp.output.contains("Exit codes"))
        #expect(try await pier().status == 2)
        #expect(try await pier("whoami").status == 3)  // not signed in

        let registered = try await pier("register", email, "--name", "Ada", password: secret)
        #expect(registered.status == 0 && registered.output.contains("Signed in as \(email)"), "\(registered.errors)")
        let session = home.appendingPathComponent("pier/session.json")
        let mode = try FileManager.default.attributesOfItem(atPath: session.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        // The mailed links, from a terminal.
        // The whole link, pasted from the mail, or its token.
        let link = try await PierClientTests.mailedLink(to: email, "/auth/email/verify")
        let token = String(try #require(link.split(separator: "token=").last))
        let verified = try await pier("email", "verify", link)
        #expect(verified.status == 0 && verified.output.contains("Verified: \(email)"), "\(verified)")
        #expect(try await pier("email", "verify", token).status == 5)
        #expect(try await pier("email", "resend").status == 0)
        let sessions = try await pier("sessions")
        #expect(sessions.status == 0 && sessions.output.contains("pier on ") && sessions.output.contains("(this one)"))
        #expect(try await pier("sessions", "end", "not-a-uuid").status == 2)
        #expect(try await pier("sessions", "end", UUID().uuidString).status == 4)
        let profile = try await pier("profile", "--name", "Ada L.", "--locale", "en-GB")
        #expect(profile.status == 0 && profile.output.contains("Ada L.") && profile.output.contains("en-GB"), "\(profile)")
        #expect(try await pier("profile").status == 2)
        #expect(try await pier("profile", "--locale", "en_GB").status == 5)
        let whoami = try await pier("whoami", "--json")
        #expect(whoami.status == 0 && whoami.output.contains(#""email":"\#(email)""#))
        // Ids in lowercase, as everywhere else Pier writes them.
        let whoamiID = try #require(
            (try JSONSerialization.jsonObject(with: Data(whoami.output.utf8)) as? [String: Any])?["id"] as? String)
        #expect(whoamiID == whoamiID.lowercased() && UUID(uuidString: whoamiID) != nil, "\(whoami.output)")

        #expect(try await pier("feedback", "send", "Hello from the terminal", "--rating", "4", "--platform", "macOS").status == 0)
        let mine = try await pier("feedback", "list")
        #expect(mine.status == 0 && mine.output.contains("Hello from the terminal"))
        #expect(try await pier("status").output.contains("none"))
        #expect(try await pier("plans", "--json").output.hasPrefix(#"{"items":["#))

        // Exit codes by outcome, and messages that say why.
        let empty = try await pier("feedback", "send", " ")
        #expect(empty.status == 5 && empty.errors.contains("message"))
        let notAdmin = try await pier("admin", "feedback", "list")
        #expect(notAdmin.status == 3 && notAdmin.errors.contains("forbidden"))
        #expect(try await pier("admin", "feedback", "export").status == 3)
        #expect(try await pier("admin", "feedback", "show", UUID().uuidString.lowercased()).status == 4)
        #expect(try await pier("frobnicate").status == 2)
        #expect(try await pier("feedback", "send", "x", "--rating", "9").status == 2)
        #expect(try await pier("feedback", "list", "--colour", "red").status == 2)
        #expect(try await Self.pier(["status"], home: home, url: "ftp://example.com").status == 2)
        let nobody = try PortHolder()
        #expect(try await Self.pier(["plans"], home: home, url: "http://127.0.0.1:\(nobody.port)").status == 6)

        // The team's commands, once the account is an admin.
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await PierClientTests.stack.value.1, poolSize: 1))
        defer { pool.close() }
        try await pool.execute("UPDATE auth.users SET role = 'admin' WHERE email = \(email)")
        #expect(try await pier("login", email, password: secret).status == 0)
        let list = try await pier("admin", "feedback", "list", "--q", "terminal", "--json")
        let page = try JSONDecoder.iso.decode(FeedbackPage.self, from: Data(list.output.utf8))
        let item = try #require(page.items.first { $0.message == "Hello from the terminal" })
        #expect(item.platform == "macos")
        let id = item.id.uuidString.lowercased()
        let updated = try await pier("admin", "feedback", "update", id, "--status", "triaged", "--tags", "cli,terminal")
        #expect(updated.status == 0, "\(updated.errors)")
        let shown = try await pier("admin", "feedback", "show", id)
        #expect(shown.output.contains("triaged") && shown.output.contains("cli,terminal"))
        // A reply from the team's side, read back from the sender's (the same account here).
        let replied = try await pier("admin", "feedback", "reply", id, "Thanks from the team")
        #expect(replied.status == 0 && replied.output.contains("shown in the sender's app"), "\(replied.errors)")
        #expect(try await pier("admin", "feedback", "show", id).output.contains("Thanks from the team"))
        #expect(try await pier("feedback", "list").output.contains("reply to \(id)"))
        #expect(try await pier("admin", "feedback", "reply", id, " ").status == 5)
        let export = home.appendingPathComponent("export.ndjson")
        let exported = try await pier("admin", "feedback", "export", "--format", "ndjson", "--output", export.path)
        #expect(exported.status == 0 && exported.errors.contains("exported"))
        #expect(try String(contentsOf: export, encoding: .utf8).contains("Hello from the terminal"))
        let streamed = try await pier("admin", "feedback", "export", "--format", "csv")
        #expect(
            streamed.status == 0 && streamed.output.hasPrefix("id,createdAt,")
                && streamed.output.contains("Hello from the terminal"))

        let plan = "cli-\(UUID().uuidString.prefix(6).lowercased())"
        let created = try await pier(
            "admin", "plans", "create", plan, "--name", "Terminal Pro", "--price", "499", "--currency", "USD", "--period", "P1M",
            "--entitlements", "pro")
        #expect(created.status == 0 && created.output.contains("Terminal Pro"), "\(created.errors)")
        let user = try JSONDecoder.iso.decode(User.self, from: Data(try await pier("whoami", "--json").output.utf8))
        // Support finds the account by the start of its address, then acts on it by address.
        let found = try await pier("admin", "users", String(email.prefix(12)).uppercased())
        #expect(found.status == 0 && found.output.contains(email) && found.output.contains(user.id.uuidString.lowercased()))
        let granted = try await pier("admin", "grant", email.uppercased(), plan, "--duration", "P1M", "--reason", "support")
        #expect(granted.status == 0 && granted.output.contains("Granted \(plan)"), "\(granted.errors)")
        #expect(try await pier("status").output.contains("active"))
        let account = try await pier("admin", "user", email)
        #expect(account.output.contains(email) && account.output.contains("role admin") && account.output.contains("grant"))
        #expect(try await pier("admin", "user", user.id.uuidString.lowercased()).output.contains("grant"))
        #expect(try await pier("admin", "user", "nobody-\(UUID())@example.com").status == 4)
        #expect(try await pier("admin", "users", "x", "--limit", "500").status == 2)
        // No In-App Purchase key on this stack: the refresh says so, as an unavailable service.
        let refresh = try await pier("admin", "user", user.id.uuidString.lowercased(), "--refresh")
        #expect(refresh.status == 6 && refresh.errors.contains("not configured"), "\(refresh)")
        // No --reason: a usage error.
        #expect(try await pier("admin", "grant", user.id.uuidString.lowercased(), plan, "--duration", "P1M").status == 2)
        #expect(try await pier("admin", "plans", "deactivate", plan).status == 0)

        // An account the team helps from the terminal: its sessions ended, a mail, disabled and
        // enabled again, made support (confirmed by the password), and the log of all of it.
        let helped = PierClientTests.email()
        let helpedHome = home.appendingPathComponent("helped")
        #expect(
            try await Self.pier(["register", helped, "--device", "Phone"], home: helpedHome, url: url, password: secret).status
                == 0)
        let listed = try await pier("admin", "sessions", helped)
        #expect(listed.status == 0 && listed.output.contains("Phone"), "\(listed.errors)")
        #expect(try await pier("admin", "sessions", helped, "--end").output.contains("Ended 1 session"))
        // Refused everywhere within the revocation bound: at once, unless the machine is busy.
        #expect(await eventually { (try? await Self.pier(["whoami"], home: helpedHome, url: url))?.status == 3 })
        #expect(try await pier("admin", "mail", helped, "verification").status == 0)
        #expect(try await pier("admin", "mail", helped, "welcome").status == 2)
        #expect(try await pier("admin", "disable", helped).output.contains("disabled"))
        #expect(try await Self.pier(["login", helped], home: helpedHome, url: url, password: secret).status == 3)
        #expect(try await pier("admin", "enable", helped).output.contains("enabled"))
        #expect(try await Self.pier(["login", helped], home: helpedHome, url: url, password: secret).status == 0)
        // A team role needs a verified address.
        #expect(try await pier("admin", "role", helped, "support", password: secret).status == 5)
        try await pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(helped)")
        #expect(try await pier("admin", "role", helped, "owner").status == 2)
        let promoted = try await pier("admin", "role", helped, "support", password: secret)
        #expect(promoted.status == 0 && promoted.output.contains("now support"), "\(promoted.errors)")
        let audit = try await pier("admin", "audit", "auth", "--user", helped)
        #expect(audit.status == 0, "\(audit.errors)")
        for action in ["user.role_changed", "user.enabled", "user.disabled", "user.mail_sent", "user.sessions_ended"] {
            #expect(audit.output.contains(action), "\(action)")
        }
        #expect(audit.output.contains("role: user → support"))
        let data = try await pier("admin", "export", helped)
        #expect(data.status == 0 && data.output.contains(#""userId""#) && data.output.contains("user.role_changed"))
        #expect(try await pier("admin", "delete", helped, password: secret).status == 0)
        #expect(try await pier("admin", "user", helped).status == 4)

        #expect(try await pier("logout").status == 0)
        #expect(!FileManager.default.fileExists(atPath: session.path))
        #expect(try await pier("whoami").status == 3)

        // Another account, signed in everywhere then deleted from the terminal.
        let other = PierClientTests.email()
        #expect(try await pier("register", other, "--device", "CI runner", password: secret).status == 0)
        #expect(try await pier("sessions").output.contains("CI runner"))
        #expect(try await pier("delete-account", password: "wrong password").status == 3)
        #expect(try await pier("delete-account", password: secret).status == 0)
        #expect(try await pier("login", other, password: secret).status == 3)
    }
}

extension JSONDecoder {
    static let iso: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
