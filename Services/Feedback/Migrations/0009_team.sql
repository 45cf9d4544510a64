-- The team, as auth's events tell it (`user.created`, `user.updated` with its role,
-- `account.deleted`): who an item may be assigned to.
CREATE TABLE feedback.team (
    user_id uuid PRIMARY KEY,
    role text NOT NULL
);
