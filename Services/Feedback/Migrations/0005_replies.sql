-- The team's replies to feedback, shown to the sender with the item and mailed to them.
CREATE TABLE feedback.replies (
    id uuid PRIMARY KEY,
    item_id uuid NOT NULL REFERENCES feedback.items (id) ON DELETE CASCADE,
    author uuid NOT NULL,
    message text NOT NULL CHECK (char_length(message) BETWEEN 1 AND 5000),
    -- Where it went: the sender's account (mailed by auth when its address is verified), the
    -- anonymous sender's reply address, or nowhere.
    delivery text NOT NULL CHECK (delivery IN ('account', 'address', 'none')),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX replies_item ON feedback.replies (item_id, created_at, id);
-- A sender's view lists the moves of their items through the workflow.
CREATE INDEX history_status ON feedback.history (item_id, id) WHERE changes ? 'status';
