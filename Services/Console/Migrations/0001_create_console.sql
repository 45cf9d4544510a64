-- The console's sessions: one per signed-in browser. The cookie holds a random secret; the row
-- is found by its SHA-256 and holds the staff member's Pier tokens sealed with a key derived from
-- that secret, so the table alone (a backup, a replica) signs nobody in.
CREATE TABLE console.sessions (
    id bytea PRIMARY KEY,
    user_id uuid NOT NULL,
    email text NOT NULL,
    role text NOT NULL,
    access_token bytea NOT NULL,
    refresh_token bytea NOT NULL,
    seal_counter bigint NOT NULL DEFAULT 0,
    access_expires_at timestamptz NOT NULL,
    csrf text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_user ON console.sessions (user_id);
CREATE INDEX sessions_last_seen ON console.sessions (last_seen_at);
