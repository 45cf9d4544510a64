import PierCrypto
import PierHTTP
import PierIdentity
import PierLive
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The subscriptions endpoints of the HTTP contract (``SubscriptionsAPI``, which says who may
/// call each), one controller per resource.
struct SubscriptionsController: Sendable {
    let plans: PlansController
    let status: StatusController
    let appStore: AppStoreController
    let grants: GrantsController
    let googlePlay: GooglePlayController
    let authenticator: Authenticator

    init(
        subscriptions: Subscriptions, live: LiveFeed, verifier: AppStoreVerifier, reconciler: AppStoreReconciler,
        signer: StatusSigner?, googlePlay: GooglePlayController, authenticator: Authenticator, logger: Logger
    ) {
        self.googlePlay = googlePlay
        plans = PlansController(subscriptions: subscriptions, logger: logger)
        status = StatusController(subscriptions: subscriptions, live: live, signer: signer, logger: logger)
        appStore = AppStoreController(subscriptions: subscriptions, verifier: verifier, reconciler: reconciler, logger: logger)
        grants = GrantsController(subscriptions: subscriptions, logger: logger)
        self.authenticator = authenticator
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let endpoints = EndpointRouter(router, authenticator: authenticator)
        let (plans, status, appStore, grants, googlePlay) = (plans, status, appStore, grants, googlePlay)
        endpoints.on(SubscriptionsAPI.plans, staffWhen: \.all) { try await plans.plans($0, $2) }
        endpoints.on(SubscriptionsAPI.createPlan) { try await plans.createPlan($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.updatePlan) { try await plans.updatePlan($1, $2.id, $3) }
        endpoints.on(SubscriptionsAPI.deletePlan) { try await plans.deletePlan($1, $2.id) }
        endpoints.on(SubscriptionsAPI.me) { try await status.me($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.keys) { try await status.keys($0, $1) }
        endpoints.on(SubscriptionsAPI.events) { try await status.events($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.entitlement) { try await status.entitlement($1, $2.key) }
        endpoints.on(SubscriptionsAPI.cancel) { try await status.cancel($0, $1) }
        endpoints.on(SubscriptionsAPI.user) { try await status.user($2.id) }
        endpoints.on(SubscriptionsAPI.refresh) { try await appStore.refresh($1, $2.id) }
        endpoints.on(SubscriptionsAPI.transaction) { try await appStore.transaction($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.notification) { try await appStore.notification($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.notifications) { try await appStore.recent($1, $2) }
        endpoints.on(SubscriptionsAPI.subscribers) { try await appStore.subscribers($0, $1) }
        endpoints.on(SubscriptionsAPI.daily) { try await appStore.daily($1, $2) }
        endpoints.on(SubscriptionsAPI.grant) { try await grants.grant($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.grants) { try await grants.grants($1, $2.userID) }
        endpoints.on(SubscriptionsAPI.revokeGrant) { try await grants.revokeGrant($1, $2.id) }
        endpoints.on(SubscriptionsAPI.googlePurchase) { try await googlePlay.purchase($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.googleNotification) { try await googlePlay.notification($0, $1, $2) }
        endpoints.on(SubscriptionsAPI.googleRefresh) { try await googlePlay.refresh($1, $2.id) }
        endpoints.on(SubscriptionsAPI.googleNotifications) { try await googlePlay.recent($1, $2) }
        routes.merge(router.routes)
    }
}
