-- Accounts, sessions (refresh-token families), refresh tokens and login throttling.
CREATE TABLE auth.users (
    id uuid PRIMARY KEY,
    email text NOT NULL,
    -- The normalized email (trimmed, lowercased): unique, so emails are case-insensitive.
    email_key text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    display_name text,
    role text NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE auth.sessions (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    revoked_reason text
);
CREATE INDEX sessions_user_id ON auth.sessions (user_id);

-- Only the SHA-256 of a refresh token is stored. A used token keeps its row (used_at set) so a
-- reuse can be told from an unknown token, and its family revoked.
CREATE TABLE auth.refresh_tokens (
    token_hash bytea PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES auth.sessions (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz
);
CREATE INDEX refresh_tokens_session_id ON auth.refresh_tokens (session_id);

-- Failed logins per account (email:<key>) and per client address (ip:<address>), shared by
-- every replica.
CREATE TABLE auth.login_throttle (
    key text PRIMARY KEY,
    failures integer NOT NULL,
    last_failure_at timestamptz NOT NULL,
    blocked_until timestamptz
);
