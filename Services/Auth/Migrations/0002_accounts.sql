-- Accounts an app can ship with: verified emails, single-use email tokens, an outbox of mails
-- written in the transaction of the change that causes them, and sessions that name their device.
ALTER TABLE auth.users
    ADD COLUMN email_verified_at timestamptz,
    ADD COLUMN locale text;
-- email_tokens may carry a change of address: its new address must not be taken by then.

-- Only the SHA-256 of a token is stored. `purpose` says what it may do: verify the address it
-- was sent to, reset the password, or confirm a change of address to `email`.
CREATE TABLE auth.email_tokens (
    token_hash bytea PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    purpose text NOT NULL CHECK (purpose IN ('verify', 'reset', 'change')),
    email text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz
);
CREATE INDEX email_tokens_user ON auth.email_tokens (user_id, purpose);

-- Mails to send. A worker claims one (attempts + 1, next attempt pushed back) in a committed
-- statement before sending it and marks it sent after: a crash in between sends it once more at
-- most. The bodies (which hold single-use links) are erased once sent.
CREATE TABLE auth.outbox (
    id uuid PRIMARY KEY,
    kind text NOT NULL,
    recipient text NOT NULL,
    message bytea,
    created_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    sent_at timestamptz,
    failed_at timestamptz,
    last_error text
);
CREATE INDEX outbox_due ON auth.outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- authenticated_at: the last time the user proved who they are in the session (`auth_time`).
ALTER TABLE auth.sessions
    ADD COLUMN authenticated_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN device_name text,
    ADD COLUMN client_address text,
    ADD COLUMN last_used_at timestamptz;

-- Accounts may have no password (signed up with Apple or another OpenID Connect provider).
ALTER TABLE auth.users ALTER COLUMN password_hash DROP NOT NULL;

-- Who the user is at an identity provider (Sign in with Apple, OpenID Connect): the provider's
-- stable subject, linked to one account. A user may have a password, identities, or both.
CREATE TABLE auth.identities (
    provider text NOT NULL,
    subject text NOT NULL,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    email text,
    -- Apple's relay stopped forwarding mail to the user (email-disabled).
    email_disabled boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX identities_user ON auth.identities (user_id);
