-- Passkeys (WebAuthn): each credential's id and COSE public key, the signature counter last seen
-- (one that goes backwards suspends the credential: a cloned authenticator, §6.1.1), whether it
-- is synced (backed up), and what the list shows.
CREATE TABLE auth.passkeys (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    credential_id bytea NOT NULL UNIQUE,
    public_key bytea NOT NULL,
    algorithm integer NOT NULL,
    sign_count bigint NOT NULL,
    backup_eligible boolean NOT NULL,
    backed_up boolean NOT NULL,
    transports text[] NOT NULL DEFAULT '{}',
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    suspended_at timestamptz
);
CREATE INDEX passkeys_user ON auth.passkeys (user_id);

-- The challenges handed out, hashed: each is spent by the ceremony that uses it, within 5 minutes;
-- a registration's belongs to the account that asked.
CREATE TABLE auth.webauthn_challenges (
    challenge_hash bytea PRIMARY KEY,
    purpose text NOT NULL CHECK (purpose IN ('register', 'login')),
    user_id uuid REFERENCES auth.users (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL
);
CREATE INDEX webauthn_challenges_expiry ON auth.webauthn_challenges (expires_at);
