-- A change of address belongs to the session that asked for it (it dies with that session), and
-- the notice to the old address carries a token that cancels it (purpose `cancel-change`).
ALTER TABLE auth.email_tokens ADD COLUMN session_id uuid REFERENCES auth.sessions (id) ON DELETE CASCADE;
ALTER TABLE auth.email_tokens DROP CONSTRAINT email_tokens_purpose_check;
ALTER TABLE auth.email_tokens
    ADD CONSTRAINT email_tokens_purpose_check CHECK (purpose IN ('verify', 'reset', 'change', 'cancel-change'));

-- Identities get an id to be listed and unlinked by, and remember whether the account's address
-- was proven when they were linked: a password reset (which proves the mailbox) unlinks those
-- that were linked while it was not.
ALTER TABLE auth.identities
    ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    ADD COLUMN unverified_link boolean NOT NULL DEFAULT false;
UPDATE auth.identities i SET unverified_link = true
FROM auth.users u WHERE u.id = i.user_id AND u.email_verified_at IS NULL;

-- Requests that send mail, counted per key (an account, a target address) in fixed windows,
-- shared by every replica. Known and unknown addresses write the same row, so both answers
-- cost the same.
CREATE TABLE auth.mail_throttle (
    key text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    count integer NOT NULL
);

-- ID tokens and Apple's notifications already accepted, until they expire: each is accepted once.
CREATE TABLE auth.used_tokens (
    key bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX used_tokens_expiry ON auth.used_tokens (expires_at);

-- Password resets asked for, turned into mails by the mail worker: the request itself is this one
-- insert whether or not an account has the address, so both answers cost the same.
CREATE TABLE auth.reset_requests (
    id bigserial PRIMARY KEY,
    email_key text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);
