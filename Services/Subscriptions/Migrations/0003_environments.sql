-- Sandbox and production are two worlds that may reuse identifiers: every App Store fact, and
-- the link of a subscription to its owner, is keyed by its environment too. A sandbox renewal
-- info can no longer switch a production subscription's renewal, nor a sandbox purchase claim a
-- production subscription.
ALTER TABLE subscriptions.appstore_owners ADD COLUMN environment text;
UPDATE subscriptions.appstore_owners o SET environment = coalesce((
    SELECT t.environment FROM subscriptions.appstore_transactions t
    WHERE t.original_transaction_id = o.original_transaction_id
    ORDER BY t.signed_date DESC LIMIT 1), 'production');
ALTER TABLE subscriptions.appstore_owners
    ALTER COLUMN environment SET NOT NULL,
    ADD CONSTRAINT appstore_owners_environment_check CHECK (environment IN ('production', 'sandbox')),
    DROP CONSTRAINT appstore_owners_pkey,
    ADD PRIMARY KEY (original_transaction_id, environment);

ALTER TABLE subscriptions.appstore_transactions
    DROP CONSTRAINT appstore_transactions_pkey,
    ADD PRIMARY KEY (transaction_id, environment);
DROP INDEX subscriptions.appstore_transactions_original;
CREATE INDEX appstore_transactions_original
    ON subscriptions.appstore_transactions (original_transaction_id, environment, expires_date DESC);

ALTER TABLE subscriptions.appstore_renewals
    ADD CONSTRAINT appstore_renewals_environment_check CHECK (environment IN ('production', 'sandbox')),
    DROP CONSTRAINT appstore_renewals_pkey,
    ADD PRIMARY KEY (original_transaction_id, environment);
