-- Anonymous accounts merged into another (from the shared event log's account.merged): what
-- they held is that account's, and so is what Apple signs for them later (renewals keep
-- carrying the appAccountToken the purchase was made with, the merged account's id).
CREATE TABLE subscriptions.merged_users (
    user_id uuid PRIMARY KEY,
    into_user_id uuid NOT NULL,
    merged_at timestamptz NOT NULL DEFAULT now()
);
