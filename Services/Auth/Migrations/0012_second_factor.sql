-- A second factor. An account's authenticator app (TOTP, RFC 6238): its shared secret sealed with
-- PIER_AUTH_MFA_KEY_FILE's key (the database alone cannot read it), the last time step a code was
-- accepted for (each code is used once), and when enrolment was confirmed (a secret offered but
-- never confirmed by a code asks nothing at sign-in).
CREATE TABLE auth.totp_factors (
    user_id uuid PRIMARY KEY REFERENCES auth.users (id) ON DELETE CASCADE,
    sealed_secret bytea NOT NULL,
    confirmed_at timestamptz,
    last_step bigint,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The ten single-use recovery codes given at enrolment, stored as SHA-256 hashes (each has 60
-- random bits: a slow hash would add nothing but time).
CREATE TABLE auth.recovery_codes (
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    code_hash bytea NOT NULL,
    used_at timestamptz,
    PRIMARY KEY (user_id, code_hash)
);

-- A first factor passed on an account with a second one: the short-lived MFA token (hashed) that
-- a code completes, what the first factor was (`amr`), the device it came from, and the wrong
-- codes it has seen (a few end it).
CREATE TABLE auth.mfa_challenges (
    token_hash bytea PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    amr text[] NOT NULL,
    device_name text,
    signed_in_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    failures integer NOT NULL DEFAULT 0
);
CREATE INDEX mfa_challenges_user ON auth.mfa_challenges (user_id);
CREATE INDEX mfa_challenges_expiry ON auth.mfa_challenges (expires_at);

-- How each session's sign-in was proven (RFC 8176 names: `pwd`, `otp`, `mfa`), carried into every
-- access token its refreshes mint. Sessions from before knew only the first factor.
ALTER TABLE auth.sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{}';
