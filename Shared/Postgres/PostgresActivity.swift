import Synchronization

/// What a pool's connections asked of the database since it was made: statements run, round
/// trips (a statement's, and the one that prepares it on a connection the first time), and rows
/// that INSERT, UPDATE, DELETE and MERGE statements report (a data-modifying `WITH` counts its
/// outer statement's). Read by `/metrics` and by the tests that hold a request to its budget.
public final class PostgresActivity: Sendable {
    public struct Counts: Sendable, Equatable, CustomStringConvertible {
        public var statements = 0
        public var roundTrips = 0
        public var rowsWritten = 0

        public init(statements: Int = 0, roundTrips: Int = 0, rowsWritten: Int = 0) {
            self.statements = statements
            self.roundTrips = roundTrips
            self.rowsWritten = rowsWritten
        }

        /// What happened between `earlier` and these counts.
        public func since(_ earlier: Counts) -> Counts {
            Counts(
                statements: statements - earlier.statements, roundTrips: roundTrips - earlier.roundTrips,
                rowsWritten: rowsWritten - earlier.rowsWritten)
        }

        public static func + (left: Counts, right: Counts) -> Counts {
            Counts(
                statements: left.statements + right.statements, roundTrips: left.roundTrips + right.roundTrips,
                rowsWritten: left.rowsWritten + right.rowsWritten)
        }

        public var description: String {
            "\(statements) statements, \(roundTrips) round trips, \(rowsWritten) rows written"
        }
    }

    /// Also counts the statements of the task it is bound to (and of its child tasks): what one
    /// request, or the work a notification set off, cost, whatever pools they used.
    @TaskLocal public static var ledger: PostgresActivity?

    private let statements = Atomic<Int>(0)
    private let roundTrips = Atomic<Int>(0)
    private let rowsWritten = Atomic<Int>(0)

    public init() {}

    public var counts: Counts {
        Counts(
            statements: statements.load(ordering: .relaxed), roundTrips: roundTrips.load(ordering: .relaxed),
            rowsWritten: rowsWritten.load(ordering: .relaxed))
    }

    func statementRan(rowsWritten written: Int) {
        statements.add(1, ordering: .relaxed)
        if written > 0 { rowsWritten.add(written, ordering: .relaxed) }
        if let ledger = Self.ledger, ledger !== self { ledger.statementRan(rowsWritten: written) }
    }

    func roundTripMade() {
        roundTrips.add(1, ordering: .relaxed)
        if let ledger = Self.ledger, ledger !== self { ledger.roundTripMade() }
    }
}
