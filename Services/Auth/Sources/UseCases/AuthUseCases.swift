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

    init(database: PostgresPool, lifetimes: Sessions.Lifetimes, desk: MailDesk) {
        self.database = database
        self.lifetimes = lifetimes
        signIns = SignIns(database: database, lifetimes: lifetimes, mails: desk.mails)
        accounts = Accounts(database: database, lifetimes: lifetimes, mails: desk.mails)
        links = MailedLinks(database: database, lifetimes: lifetimes, desk: desk)
        staff = StaffActions(database: database, lifetimes: lifetimes)
    }

    var users: Users { Users(database) }
    var sessions: Sessions { Sessions(database, lifetimes) }
    var identities: Identities { Identities(database) }
    var usedTokens: UsedTokens { UsedTokens(database) }
}
