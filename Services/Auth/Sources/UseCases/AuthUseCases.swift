import PierCrypto
import PierPostgres

/// What the auth controllers work with: the use cases, each step of which is one unit of work,
/// and the repositories on the pool for what one statement reads or changes alone.
struct AuthUseCases: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes
    let signIns: SignIns
    let accounts: Accounts
    let links: MailedLinks
    let staff: StaffActions
    let secondFactors: SecondFactorFlows
    let passkeys: PasskeyFlows

    /// - Parameter secondFactors: the key that seals authenticator apps' secrets, the throttle
    ///   wrong codes count against, and the issuer name the apps show.
    /// - Parameter rp: the relying party passkeys are made for.
    init(
        database: PostgresPool, lifetimes: Sessions.Lifetimes, desk: MailDesk,
        secondFactors settings: (box: SecretBox, throttle: LoginThrottle, issuer: String), rp: WebAuthn.RelyingParty
    ) {
        self.database = database
        self.lifetimes = lifetimes
        signIns = SignIns(database: database, lifetimes: lifetimes, mails: desk.mails)
        accounts = Accounts(database: database, lifetimes: lifetimes, mails: desk.mails)
        links = MailedLinks(database: database, lifetimes: lifetimes, desk: desk)
        staff = StaffActions(database: database, lifetimes: lifetimes)
        secondFactors = SecondFactorFlows(
            database: database, lifetimes: lifetimes, desk: desk, signIns: signIns, box: settings.box,
            throttle: settings.throttle, issuer: settings.issuer)
        passkeys = PasskeyFlows(database: database, lifetimes: lifetimes, mails: desk.mails, signIns: signIns, rp: rp)
    }

    var users: Users { Users(database) }
    var sessions: Sessions { Sessions(database, lifetimes) }
    var identities: Identities { Identities(database) }
    var usedTokens: UsedTokens { UsedTokens(database) }
}
