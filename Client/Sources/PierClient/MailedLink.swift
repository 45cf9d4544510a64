import Foundation

/// A link Pier mailed (address verification, password reset, an address change confirmed or
/// cancelled), as the app receives it when iOS or Android opens it in the app rather than in the
/// browser (universal links / app links: the gateway serves the domain's association files from
/// `PIER_APPLE_APP_IDS` and `PIER_ANDROID_PACKAGE`; docs/apps.md, "Links that open the app").
///
/// ```swift
/// .onOpenURL { url in
///     switch MailedLink(url) {
///     case .verifyEmail(let token)?: Task { try await pier.verifyEmail(token: token) }
///     case .resetPassword(let token)?: resetToken = token   // show the new-password screen
///     case .confirmEmailChange(let token)?: Task { try await pier.confirmEmailChange(token: token) }
///     case .cancelEmailChange(let token)?: Task { try await pier.cancelEmailChange(token: token) }
///     case nil: break                                        // not Pier's
///     }
/// }
/// ```
public enum MailedLink: Sendable, Equatable {
    case verifyEmail(token: String)
    case resetPassword(token: String)
    case confirmEmailChange(token: String)
    case cancelEmailChange(token: String)

    /// The link in `url`, or nil when it is not one Pier mails or carries no token. Only the path
    /// (its end: the public URL may have a prefix) and the `token` are read: which domains reach
    /// the app is decided by the association files, not here.
    public init?(_ url: URL) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value, !token.isEmpty
        else { return nil }
        let path = components.path
        if path.hasSuffix(AuthAPI.verifyEmailPage.template) {
            self = .verifyEmail(token: token)
        } else if path.hasSuffix(AuthAPI.resetPasswordPage.template) {
            self = .resetPassword(token: token)
        } else if path.hasSuffix(AuthAPI.confirmEmailChangePage.template) {
            self = .confirmEmailChange(token: token)
        } else if path.hasSuffix(AuthAPI.cancelEmailChangePage.template) {
            self = .cancelEmailChange(token: token)
        } else {
            return nil
        }
    }
}
