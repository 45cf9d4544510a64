-- Merging an anonymous account into an account that already has the address or identity it
-- asked for. The anonymous session asks for a merge token (the proof of that side); a sign-in
-- of the other account after it (the proof of this side) spends it. The token dies with the
-- session or the account that asked, and with its first use.
CREATE TABLE auth.merge_tokens (
    token_hash bytea PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    session_id uuid NOT NULL REFERENCES auth.sessions (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX merge_tokens_user ON auth.merge_tokens (user_id);

-- Each merge done (the anonymous account is gone; this row says where it went): the dashboard
-- counts them per day, and an event replayed later still finds its target.
CREATE TABLE auth.merges (
    anonymous_id uuid PRIMARY KEY,
    into_id uuid NOT NULL,
    anonymous_at timestamptz NOT NULL,
    merged_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX merges_at ON auth.merges (merged_at);
