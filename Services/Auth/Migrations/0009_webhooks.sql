-- Webhooks: one row per message and endpoint, written in the transaction that moves the
-- "webhooks" cursor past its event (exactly once), delivered at least once, in order per
-- subject and endpoint. `body` is the exact bytes signed and sent on every attempt.
CREATE TABLE auth.webhook_deliveries (
    id bigserial PRIMARY KEY,
    message_id text NOT NULL,
    endpoint text NOT NULL,
    event_id bigint NOT NULL,
    type text NOT NULL,
    subject text NOT NULL,
    body text NOT NULL,
    state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    last_status int,
    last_error text,
    replay_of bigint REFERENCES auth.webhook_deliveries (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz
);
-- What is due, and whether an earlier message of the same subject is still pending.
CREATE INDEX webhook_deliveries_due ON auth.webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_subject ON auth.webhook_deliveries (endpoint, subject, id) WHERE state = 'pending';
-- The admins' listing, newest first, per endpoint and state.
CREATE INDEX webhook_deliveries_listing ON auth.webhook_deliveries (endpoint, id);
CREATE INDEX webhook_deliveries_event ON auth.webhook_deliveries (event_id);
-- Webhooks start with the events that follow their introduction: the log's past is not sent.
INSERT INTO auth.event_cursor (consumer, last_event_id)
SELECT 'webhooks', coalesce(max(id), 0) FROM events.events
ON CONFLICT (consumer) DO NOTHING;
