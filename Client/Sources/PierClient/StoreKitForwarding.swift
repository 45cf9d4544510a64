// Compiled on Apple platforms only (StoreKit 2); nothing on Linux builds or tests this file.
#if canImport(StoreKit)
    import Foundation
    import PierModels
    import StoreKit

    @available(iOS 16, macOS 13, tvOS 16, watchOS 9, visionOS 1, *)
    extension PierSubscriptions {
        /// Buys `product` for the signed-in user, tagged with their id (`appAccountToken`, which
        /// Pier checks), sends the transaction to Pier and finishes it. nil when the purchase was
        /// cancelled or is pending (Ask to Buy): it arrives later through
        /// ``forwardTransactionUpdates()``.
        public func purchase(_ product: Product) async throws -> SubscriptionStatus? {
            guard let user = authorized.sessions.snapshot.withLock({ $0?.id }) else { throw PierError.signedOut() }
            let result = try await product.purchase(options: [.appAccountToken(user)])
            guard case .success(let verification) = result, case .verified(let transaction) = verification else { return nil }
            let status = try await submit(signedTransaction: verification.jwsRepresentation)
            await transaction.finish()
            return status
        }

        /// Sends Pier every transaction StoreKit delivers outside a purchase (renewals, other
        /// devices, refunds, Ask to Buy), finishing each once Pier has it. Start it once at launch:
        /// `Task { await pier.subscriptions.forwardTransactionUpdates() }`.
        public func forwardTransactionUpdates() async {
            for await update in Transaction.updates {
                guard case .verified(let transaction) = update else { continue }
                do {
                    try await submit(signedTransaction: update.jwsRepresentation)
                    await transaction.finish()
                } catch let error as PierError where !error.isTransient {
                    // Refused for good (not a subscription, another account's): nothing to retry.
                    await transaction.finish()
                } catch {
                    // Left unfinished: StoreKit delivers it again.
                }
            }
        }
    }
#endif
