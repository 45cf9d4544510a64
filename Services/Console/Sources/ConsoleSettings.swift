import PierService

extension ConsoleService {
    /// The settings the console reads, declared once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            "PIER_CONSOLE_IDLE_MINUTES", default: "`30`",
            "a console session unused this long is signed out"),
        .init(
            "PIER_CONSOLE_ABSOLUTE_HOURS", default: "`12`",
            "a console session this old is signed out, used or not"),
        .init(
            "PIER_CONSOLE_SECURE_COOKIES", default: "`true` in production",
            "the cookie is `__Host-pier_console` and `Secure` (served over TLS)"),
        .init(
            "PIER_CONSOLE_ORIGIN", default: "the request's `Host`",
            #"""
            the origin browsers open the console at (`https://admin.example.com`), when a proxy in
            front rewrites `Host`: forms must come from it
            """#),
        .init(
            "PIER_CONSOLE_API_URL", default: "none",
            #"""
            Pier's API (the gateway's address), required by `pier-console` running alone; hosted,
            the console calls the process's routes in-process unless it is set
            """#),
    ]
}
