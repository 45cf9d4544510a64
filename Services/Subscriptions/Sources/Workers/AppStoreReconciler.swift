import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads subscription statuses from Apple (the App Store Server API) and records what Apple
/// signed there as facts, verified like any other signed data: on an admin's request for one
/// user, and by itself in the background for a purchase whose renewal info Pier has not seen.
final class AppStoreReconciler: LifecycleService {
    var lifecycleName: String { "appstore reconciler" }

    enum Failure: Error, CustomStringConvertible {
        /// No In-App Purchase key is configured.
        case unconfigured
        case apple(AppStoreServerAPI.Failure)
        case database(any Error)

        var description: String {
            switch self {
            case .unconfigured: "the App Store Server API is not configured"
            case .apple(let failure): failure.description
            case .database(let error): "\(error)"
            }
        }
    }

    /// What one refresh read.
    struct Outcome: Sendable {
        /// The subscriptions Apple answered for.
        var subscriptions = 0
        /// The signed transactions and renewal infos recorded.
        var transactions = 0
        /// The signed items that did not verify (logged, not recorded).
        var refused = 0
    }

    let api: AppStoreServerAPI?
    private let verifier: AppStoreVerifier
    private let subscriptions: Subscriptions
    private let logger: Logger
    /// Background reads asked for, run by ``run()``.
    private let requests: AsyncStream<(String, String)>
    private let asking: AsyncStream<(String, String)>.Continuation
    /// The subscriptions (original transaction ids) asked for or being read: one at a time each.
    private let pending = Mutex<Set<String>>([])

    init(api: AppStoreServerAPI?, verifier: AppStoreVerifier, subscriptions: Subscriptions, logger: Logger) {
        self.api = api
        self.verifier = verifier
        self.subscriptions = subscriptions
        self.logger = logger
        (requests, asking) = AsyncStream.makeStream(of: (String, String).self)
    }

    /// Every App Store subscription linked to `user`, read again. One request answers for all
    /// the subscriptions of one Apple account, so a subscription another answer covered is not
    /// asked for again.
    func refresh(user: UUID) async throws(Failure) -> Outcome {
        guard api != nil else { throw .unconfigured }
        let linked: [(originalTransactionID: String, environment: String)]
        do {
            linked = try await subscriptions.appStoreSubscriptions(of: user)
        } catch {
            throw .database(error)
        }
        var outcome = Outcome()
        var covered: Set<String> = []
        for subscription in linked where !covered.contains(subscription.originalTransactionID) {
            do {
                let read = try await refresh(subscription.originalTransactionID, environment: subscription.environment)
                covered.formUnion(read.covered)
                outcome.subscriptions += read.outcome.subscriptions
                outcome.transactions += read.outcome.transactions
                outcome.refused += read.outcome.refused
            } catch .apple(.notFound) {
                // Apple does not know it (a purchase made with StoreKit testing, say): nothing to read.
                continue
            }
        }
        return outcome
    }

    /// Reads the statuses of the Apple account that made `transactionID` and records them.
    func refresh(_ transactionID: String, environment: String) async throws(Failure) -> (
        outcome: Outcome, covered: Set<String>
    ) {
        guard let api else { throw .unconfigured }
        let response: AppStoreServerAPI.StatusResponse
        do {
            response = try await api.subscriptionStatuses(transactionID: transactionID, environment: environment)
        } catch {
            throw .apple(error)
        }
        var outcome = Outcome()
        var covered: Set<String> = []
        for item in response.data.flatMap(\.lastTransactions) {
            covered.insert(item.originalTransactionId)
            outcome.subscriptions += 1
            let transaction: Verified<AppStoreTransaction>
            var renewal: Verified<AppStoreRenewalInfo>? = nil
            do {
                transaction = try await verifier.transaction(item.signedTransactionInfo)
                if let signed = item.signedRenewalInfo { renewal = try await verifier.renewalInfo(signed) }
            } catch {
                outcome.refused += 1
                logger.warning(
                    "appstore api item refused",
                    [("original_transaction_id", .string(item.originalTransactionId)), ("reason", .string(error.reason))])
                continue
            }
            do {
                try await subscriptions.apply(transaction, renewal)
            } catch {
                throw .database(error)
            }
            outcome.transactions += renewal == nil ? 1 : 2
        }
        return (outcome, covered)
    }

    /// Reads the subscription's statuses in the background, unless a read for it is asked for or
    /// running, or no key is configured; a failure is logged (the next purchase or an admin
    /// tries again).
    func reconcileLater(_ originalTransactionID: String, environment: String) {
        guard api != nil, pending.withLock({ $0.insert(originalTransactionID).inserted }) else { return }
        asking.yield((originalTransactionID, environment))
    }

    /// Runs the background reads as they are asked for, until its task is cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await (originalTransactionID, environment) in requests {
                group.addTask {
                    do {
                        let read = try await self.refresh(originalTransactionID, environment: environment)
                        self.logger.info(
                            "appstore statuses reconciled",
                            [
                                ("original_transaction_id", .string(originalTransactionID)),
                                ("transactions", .int(read.outcome.transactions)),
                            ])
                    } catch {
                        self.logger.warning(
                            "appstore reconciliation failed",
                            [("original_transaction_id", .string(originalTransactionID)), ("error", .string("\(error)"))])
                    }
                    _ = self.pending.withLock { $0.remove(originalTransactionID) }
                }
            }
        }
    }
}
