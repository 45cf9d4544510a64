import PierModels

extension Notes {
    /// The notes of the subscriptions types, by component name.
    static let subscriptions: [String: SchemaNotes] = [
        "Plan": SchemaNotes(
            members: [
                "id": ["pattern": "^[a-z0-9][a-z0-9_-]{0,63}$"],
                "price": ["description": "minor units of currency"],
                "currency": ["pattern": "^[A-Z]{3}$"],
                "billingPeriod": ["description": "ISO 8601 duration: P1W, P1M, P1Y, P7D…"],
                "trialPeriod": ["description": "ISO 8601 duration: P1W, P1M, P1Y, P7D…"],
                "entitlements": ["minItems": 1, "maxItems": 32],
                "appStoreProductIds": ["maxItems": 32],
            ]),
        "CreatePlan": SchemaNotes(
            members: [
                "id": ["pattern": "^[a-z0-9][a-z0-9_-]{0,63}$"],
                "name": ["minLength": 1, "maxLength": 100],
                "description": ["maxLength": 2000],
                "price": ["minimum": 0],
                "currency": ["pattern": "^[A-Z]{3}$"],
                "billingPeriod": ["description": "ISO 8601 duration: P1W, P1M, P1Y, P7D…"],
                "trialPeriod": ["description": "ISO 8601 duration: P1W, P1M, P1Y, P7D…"],
                "entitlements": ["minItems": 1, "maxItems": 32],
                "appStoreProductIds": ["maxItems": 32],
            ]),
        "UpdatePlan": SchemaNotes(
            members: [
                "name": ["minLength": 1, "maxLength": 100],
                "description": ["maxLength": 2000],
                "price": ["minimum": 0],
                "currency": ["pattern": "^[A-Z]{3}$"],
                "billingPeriod": ["description": "ISO 8601 duration: P1W, P1M, P1Y, P7D…"],
                "trialPeriod": ["description": "an ISO 8601 duration, or \"\" to remove the trial"],
                "entitlements": ["minItems": 1, "maxItems": 32],
                "appStoreProductIds": ["maxItems": 32],
            ]),
        "SubscriptionStatus": SchemaNotes(
            members: [
                "environment": ["enum": ["production", "sandbox"]],
                "offer": [
                    "description":
                        "The offer of the deciding App Store purchase. Only a free introductory offer makes the status trialing; a paid one is active."
                ],
                "renewsTo": ["description": "The plan a pending downgrade or crossgrade renews to, when not the current one."],
                "expirationReason": [
                    "description":
                        "cancelled, billing_error, price_increase_declined, product_unavailable or other (Apple's expirationIntent)."
                ],
                "priceIncrease": ["description": "A price increase waiting for the user's consent (pending) or accepted."],
                "price": [
                    "description":
                        "What was paid for the deciding purchase, in minor units of currency (ISO 4217 exponents: 499 is 4.99 USD, 500 is 500 JPY, 1250 is 1.250 KWD), for App Store and Google Play alike."
                ],
                "currency": ["description": "ISO 4217 currency of price (the user's storefront)."],
                "familyShared": ["description": "Access through Family Sharing, not the user's own purchase."],
                "revocation": ["description": "Set when the deciding purchase was refunded."],
            ]),
        "SubscriptionOffer": SchemaNotes(
            summary:
                "The offer of the deciding App Store purchase. Only a free introductory offer makes the status trialing; a paid one is active.",
            members: [
                "type": [
                    "description": "introductory, promotional, offer_code or win_back (offer_N for a type Apple adds later)"
                ],
                "discountType": ["description": "free_trial, pay_as_you_go or pay_up_front (lowercased from Apple's)"],
            ]),
        "PlanReference": SchemaNotes(
            summary: "The plan a pending downgrade or crossgrade renews to, when not the current one."),
        "SubscriptionRevocation": SchemaNotes(
            summary: "Set when the deciding purchase was refunded.",
            members: [
                "reason": ["enum": ["app_issue", "other"]],
                "type": ["description": "refund_full, refund_prorated or family_revoke"],
            ]),
        "AppStoreTransactionRequest": SchemaNotes(
            members: [
                "signedTransaction": ["description": "Transaction.jwsRepresentation"]
            ]),
        "CreateGrant": SchemaNotes(
            summary: "duration or until, not both",
            members: [
                "duration": ["description": "ISO 8601 duration: P1W, P1M, P1Y, P7D…"],
                "reason": ["minLength": 1, "maxLength": 500],
            ]),
        "SubscriptionFact": SchemaNotes(
            members: [
                "kind": ["enum": ["grant", "appstore.transaction", "appstore.renewal", "appstore.notification"]]
            ]),
        "AppStoreNotificationEntry": SchemaNotes(
            members: [
                "outcome": ["enum": ["applied", "ignored", "refused"]]
            ]),
        "SubscriptionDaily": SchemaNotes(
            summary:
                "App Store subscriptions per UTC day. A period counts from its purchase to its expiry or revocation; a subscription is active at the end of a day (today: now) when a period covers that moment.",
            members: [
                "days": ["description": "Oldest first, today last"]
            ]),
        "SubscriptionDailyDay": SchemaNotes(
            members: [
                "day": ["format": "date", "description": "UTC"],
                "active": [
                    "description":
                        "Subscriptions in a paid or introductory period at the end of the day, per plan id (introductory offers included)"
                ],
                "trials": [
                    "description": "Of those, in an introductory offer (a free trial or an introductory price), per plan id"
                ],
                "conversions": [
                    "description":
                        "Paid periods that began that day right after an introductory offer (within 60 days of its end)"
                ],
                "cancellations": [
                    "description":
                        "Subscribers who turned auto-renew off that day (DID_CHANGE_RENEWAL_STATUS, AUTO_RENEW_DISABLED)"
                ],
                "refunds": ["description": "Periods refunded or revoked that day"],
            ]),
    ]
}
