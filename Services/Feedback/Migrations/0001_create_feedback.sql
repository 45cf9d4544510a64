-- Feedback items, their admin history, idempotency keys and the event-log cursor.
CREATE TABLE feedback.items (
    id uuid PRIMARY KEY,
    -- The signed-in sender; NULL for anonymous feedback and after the account was deleted.
    user_id uuid,
    -- Only kept for anonymous senders (a signed-in sender is reachable through the account).
    email text,
    message text NOT NULL CHECK (char_length(message) BETWEEN 1 AND 5000),
    rating smallint CHECK (rating BETWEEN 1 AND 5),
    category text NOT NULL CHECK (category IN ('bug', 'idea', 'praise', 'question', 'other')),
    app_version text,
    build text,
    platform text CHECK (platform IN ('ios', 'ipados', 'macos', 'watchos', 'tvos', 'visionos', 'android', 'web', 'other')),
    os_version text,
    device text,
    locale text,
    request_ids text[] NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'new'
        CHECK (status IN ('new', 'triaged', 'planned', 'in_progress', 'done', 'closed', 'duplicate')),
    duplicate_of uuid REFERENCES feedback.items (id),
    moderation text NOT NULL DEFAULT 'approved' CHECK (moderation IN ('pending', 'approved', 'rejected')),
    tags text[] NOT NULL DEFAULT '{}',
    internal_note text,
    client_address text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    search tsvector GENERATED ALWAYS AS (to_tsvector('simple', message)) STORED
);
-- Keyset pagination, newest first: everyone's view, and a sender's own.
CREATE INDEX items_created ON feedback.items (created_at DESC, id DESC);
CREATE INDEX items_user_created ON feedback.items (user_id, created_at DESC, id DESC) WHERE user_id IS NOT NULL;
-- Quotas count recent items per client address.
CREATE INDEX items_address_created ON feedback.items (client_address, created_at DESC);
CREATE INDEX items_search ON feedback.items USING gin (search);

-- Who changed what, when (admins only).
CREATE TABLE feedback.history (
    id bigserial PRIMARY KEY,
    item_id uuid NOT NULL REFERENCES feedback.items (id) ON DELETE CASCADE,
    actor uuid NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now(),
    changes jsonb NOT NULL
);
CREATE INDEX history_item ON feedback.history (item_id, id);

-- A retried POST with the same key answers the stored response and creates nothing.
CREATE TABLE feedback.idempotency_keys (
    scope text NOT NULL,
    key text NOT NULL,
    request_hash bytea NOT NULL,
    item_id uuid NOT NULL REFERENCES feedback.items (id) ON DELETE CASCADE,
    response text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON feedback.idempotency_keys (created_at);

-- How far this service has read the shared event log.
CREATE TABLE feedback.event_cursor (
    consumer text PRIMARY KEY,
    last_event_id bigint NOT NULL
);
