-- The help desk's own things, the console's alone (Pier's services know nothing of them).

-- Views: a team member's saved inbox filters ("my open bugs"), by name.
CREATE TABLE console.views (
    id uuid PRIMARY KEY,
    owner uuid NOT NULL,
    name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 60),
    query text NOT NULL CHECK (char_length(query) <= 1000),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner, name)
);

-- Saved replies, shared by the team; `{name}` and the other placeholders are filled in when one
-- is used.
CREATE TABLE console.saved_replies (
    id uuid PRIMARY KEY,
    title text NOT NULL UNIQUE CHECK (char_length(title) BETWEEN 1 AND 80),
    body text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 5000),
    created_by uuid NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Who has an item open: each open page tells every few seconds; a row older than a minute is
-- someone who left.
CREATE TABLE console.presence (
    item_id uuid NOT NULL,
    user_id uuid NOT NULL,
    name text NOT NULL,
    seen_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, user_id)
);
CREATE INDEX presence_seen ON console.presence (seen_at);
