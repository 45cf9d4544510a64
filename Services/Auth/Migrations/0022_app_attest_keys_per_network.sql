-- The network each key was attested from: a genuine device can make App Attest keys (and so new
-- installations) without limit, and no two keys of one device can be told apart, so key
-- attestations are counted per client network (`PIER_AUTH_APP_ATTEST_KEYS_PER_ADDRESS_PER_DAY`).
ALTER TABLE auth.app_attest_keys ADD COLUMN address text;
CREATE INDEX app_attest_keys_address ON auth.app_attest_keys (address, created_at) WHERE address IS NOT NULL;
