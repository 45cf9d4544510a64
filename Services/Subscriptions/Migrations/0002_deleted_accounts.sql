-- Accounts deleted (from the shared event log's account.deleted): their App Store
-- subscriptions stay detached, whatever Apple signs for them later (renewals keep carrying the
-- appAccountToken the purchase was made with).
CREATE TABLE subscriptions.deleted_users (
    user_id uuid PRIMARY KEY,
    deleted_at timestamptz NOT NULL DEFAULT now()
);

-- A signed payload as it is kept: without its appAccountToken when that names a deleted account.
CREATE FUNCTION subscriptions.detached(payload jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN EXISTS (
        SELECT 1 FROM subscriptions.deleted_users d WHERE d.user_id::text = lower(payload ->> 'appAccountToken')
    ) THEN payload - 'appAccountToken' ELSE payload END
$$;
