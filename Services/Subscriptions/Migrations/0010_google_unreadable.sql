-- A Google Play purchase whose answer Pier cannot hold (a price beyond any plan's): why, and
-- that it is not read again on its own (a notification, or support's refresh, reads it again).
ALTER TABLE subscriptions.google_purchases ADD COLUMN unreadable text;
