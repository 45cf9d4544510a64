-- Plans, and the facts a user's subscription status is computed from: admin grants and App
-- Store transactions, renewal infos and notifications. Facts are only ever added or replaced by
-- a newer signed fact; status is derived from them and the current time when asked.
CREATE TABLE subscriptions.plans (
    id text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 2000),
    price bigint NOT NULL CHECK (price >= 0),
    currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    billing_period text NOT NULL,
    trial_period text,
    entitlements text[] NOT NULL CHECK (cardinality(entitlements) >= 1),
    appstore_product_ids text[] NOT NULL DEFAULT '{}',
    active boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plans_products ON subscriptions.plans USING gin (appstore_product_ids);

-- Access given by the team (support, promotions). Revoked grants stay as history.
CREATE TABLE subscriptions.grants (
    id uuid PRIMARY KEY,
    -- NULL once the account was deleted (kept for accounting).
    user_id uuid,
    plan_id text NOT NULL REFERENCES subscriptions.plans (id) ON DELETE RESTRICT,
    starts_at timestamptz NOT NULL,
    ends_at timestamptz NOT NULL CHECK (ends_at > starts_at),
    reason text NOT NULL,
    granted_by uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    revoked_by uuid,
    cancelled_at timestamptz
);
CREATE INDEX grants_user ON subscriptions.grants (user_id, ends_at DESC);

-- Which user an App Store subscription (its original transaction) belongs to.
CREATE TABLE subscriptions.appstore_owners (
    original_transaction_id text PRIMARY KEY,
    -- NULL once the account was deleted; a later restore by a new account may claim it.
    user_id uuid,
    linked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX appstore_owners_user ON subscriptions.appstore_owners (user_id);

-- Verified signed transactions, one row per transaction id, replaced only by a newer signed one
-- (a refund or a renewal extension re-signs the same transaction).
CREATE TABLE subscriptions.appstore_transactions (
    transaction_id text PRIMARY KEY,
    original_transaction_id text NOT NULL,
    product_id text NOT NULL,
    purchase_date timestamptz NOT NULL,
    expires_date timestamptz,
    revocation_date timestamptz,
    revocation_reason int,
    offer_type int,
    environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
    signed_date timestamptz NOT NULL,
    payload jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX appstore_transactions_original ON subscriptions.appstore_transactions (original_transaction_id, expires_date DESC);
CREATE INDEX appstore_transactions_product ON subscriptions.appstore_transactions (product_id);

-- The latest verified renewal info per subscription.
CREATE TABLE subscriptions.appstore_renewals (
    original_transaction_id text PRIMARY KEY,
    auto_renew boolean NOT NULL,
    auto_renew_product_id text,
    billing_retry boolean NOT NULL,
    grace_period_expires_date timestamptz,
    expiration_intent int,
    environment text NOT NULL,
    signed_date timestamptz NOT NULL,
    payload jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Every verified App Store Server Notification, once (Apple retries until it gets a 200).
CREATE TABLE subscriptions.appstore_notifications (
    notification_uuid uuid PRIMARY KEY,
    notification_type text NOT NULL,
    subtype text,
    original_transaction_id text,
    environment text NOT NULL,
    signed_date timestamptz NOT NULL,
    data jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX appstore_notifications_original ON subscriptions.appstore_notifications (original_transaction_id, signed_date);

-- Where this service's reading of the shared event log stands.
CREATE TABLE subscriptions.event_cursor (
    consumer text PRIMARY KEY,
    last_event_id bigint NOT NULL
);
