import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The subscriptions endpoints of the HTTP contract, one controller per resource: the route
/// table and the authentication each route needs, in one place.
struct SubscriptionsController: Sendable {
    let plans: PlansController
    let status: StatusController
    let appStore: AppStoreController
    let grants: GrantsController
    let authenticator: Authenticator

    init(
        subscriptions: Subscriptions, live: LiveFeed, verifier: AppStoreVerifier, reconciler: AppStoreReconciler,
        signer: StatusSigner?, authenticator: Authenticator, logger: Logger
    ) {
        plans = PlansController(subscriptions: subscriptions, logger: logger)
        status = StatusController(subscriptions: subscriptions, live: live, signer: signer, logger: logger)
        appStore = AppStoreController(subscriptions: subscriptions, verifier: verifier, reconciler: reconciler, logger: logger)
        grants = GrantsController(subscriptions: subscriptions, logger: logger)
        self.authenticator = authenticator
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let signedIn = router.group(Authentication(authenticator, .required))
        let staff = router.group(Authentication(authenticator, .staff))
        let admins = router.group(Authentication(authenticator, .admin))
        let (plans, status, appStore, grants) = (plans, status, appStore, grants)
        // Public; its `?all=true` view (inactive plans too) is for the team.
        router.group(Authentication(authenticator, .staff, when: { $0.query("all") == "true" }))
            .get("/subscriptions/plans") { try await plans.plans($0, $1) }
        admins.post("/subscriptions/plans", body: CreatePlan.self) { try await plans.createPlan($0, $1, $2) }
        admins.patch("/subscriptions/plans/{id}", body: UpdatePlan.self) { try await plans.updatePlan($0, $1, $2) }
        admins.delete("/subscriptions/plans/{id}") { try await plans.deletePlan($0, $1) }
        signedIn.get("/subscriptions/me") { try await status.me($0, $1) }
        router.get("/subscriptions/.well-known/jwks.json") { try await status.keys($0, $1) }
        signedIn.get("/subscriptions/me/events") { try await status.events($0, $1) }
        signedIn.get("/subscriptions/me/entitlements/{key}") { try await status.entitlement($0, $1) }
        signedIn.post("/subscriptions/me/cancel") { try await status.cancel($0, $1) }
        staff.get("/subscriptions/users/{userId}") { try await status.user($0, $1) }
        staff.post("/subscriptions/users/{userId}/appstore/refresh") { try await appStore.refresh($0, $1) }
        signedIn.post("/subscriptions/appstore/transactions", body: AppStoreTransactionRequest.self) {
            try await appStore.transaction($0, $1, $2)
        }
        // Apple's server calls this: the signed payload is the credential.
        router.post("/subscriptions/appstore/notifications", body: AppStoreNotificationRequest.self) {
            try await appStore.notification($0, $1, $2)
        }
        staff.get("/subscriptions/appstore/notifications") { try await appStore.recent($0, $1) }
        staff.get("/subscriptions/subscribers") { try await appStore.subscribers($0, $1) }
        staff.get("/subscriptions/stats/daily") { try await appStore.daily($0, $1) }
        staff.post("/subscriptions/grants", body: CreateGrant.self) { try await grants.grant($0, $1, $2) }
        staff.get("/subscriptions/grants") { try await grants.grants($0, $1) }
        staff.delete("/subscriptions/grants/{id}") { try await grants.revokeGrant($0, $1) }
        routes.merge(router.routes)
    }
}
