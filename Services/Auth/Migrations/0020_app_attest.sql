-- App Attest: the keys each installation attested (Apple's attestation checked once), with the
-- counter of their last assertion (it must grow: a replayed assertion is refused) and Apple's
-- receipt (for a later fraud-risk check).
CREATE TABLE auth.app_attest_keys (
    key_id bytea PRIMARY KEY,
    installation text NOT NULL,
    public_key bytea NOT NULL,
    app_id text NOT NULL,
    receipt bytea NOT NULL,
    counter bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at timestamptz
);
CREATE INDEX app_attest_keys_installation ON auth.app_attest_keys (installation);
