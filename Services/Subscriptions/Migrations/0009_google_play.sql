-- Google Play subscriptions beside the App Store's. A plan names its Google products (a product
-- id, or productId:basePlanId); each purchase token is kept as Google last described it
-- (purchases.subscriptionsv2.get, never a notification's word alone), with the account it is
-- bound to; acknowledgements owed to Google wait in an outbox until done; every Real-time
-- developer notification is kept once, by its Pub/Sub message id.
ALTER TABLE subscriptions.plans ADD COLUMN google_product_ids text[] NOT NULL DEFAULT '{}';
CREATE INDEX plans_google_products ON subscriptions.plans USING gin (google_product_ids);

CREATE TABLE subscriptions.google_purchases (
    purchase_token text PRIMARY KEY,
    -- NULL once the account was deleted: the record stays, bound to nobody.
    user_id uuid,
    product_id text NOT NULL,
    base_plan_id text,
    offer_id text,
    -- Google's subscriptionState (SUBSCRIPTION_STATE_ACTIVE, …).
    state text NOT NULL,
    start_time timestamptz,
    expiry_time timestamptz,
    auto_renew boolean NOT NULL,
    -- The current phase is a free trial.
    trial boolean NOT NULL,
    -- testPurchase: a licence tester's, kept apart as sandbox purchases are.
    test boolean NOT NULL,
    acknowledged boolean NOT NULL,
    -- The recurring price in minor units of currency.
    price bigint,
    currency text,
    paused_until timestamptz,
    -- A voided purchase (refund, chargeback, revocation): no access from then on.
    revoked_at timestamptz,
    -- When Pier saw its free trial end in a paid period (the dashboard's conversions).
    converted_at timestamptz,
    linked_purchase_token text,
    -- The newer token of an upgrade, downgrade or resubscription that replaced this one.
    superseded_by text,
    latest_order_id text,
    payload jsonb NOT NULL,
    read_at timestamptz NOT NULL DEFAULT now(),
    -- Set when the purchase must be read from Google again (a notification that could not be
    -- followed); the reconciliation job clears it.
    reread_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX google_purchases_user ON subscriptions.google_purchases (user_id);
CREATE INDEX google_purchases_linked ON subscriptions.google_purchases (linked_purchase_token);
CREATE INDEX google_purchases_due ON subscriptions.google_purchases (coalesce(reread_at, expiry_time))
    WHERE superseded_by IS NULL AND revoked_at IS NULL;
CREATE INDEX google_purchases_started ON subscriptions.google_purchases (start_time);

CREATE TABLE subscriptions.google_acknowledgements (
    purchase_token text PRIMARY KEY,
    product_id text NOT NULL,
    attempts int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX google_acknowledgements_due ON subscriptions.google_acknowledgements (next_attempt_at);

CREATE TABLE subscriptions.google_notifications (
    message_id text PRIMARY KEY,
    -- subscription, voided, test or other (a one-time product's).
    kind text NOT NULL,
    notification_type int,
    purchase_token text,
    outcome text NOT NULL CHECK (outcome IN ('applied', 'ignored')),
    reason text,
    data jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX google_notifications_received ON subscriptions.google_notifications (received_at DESC);
