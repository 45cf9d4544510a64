-- Quotas as a counter row per sender (fixed one-minute and one-day windows), updated in the
-- same statement that stores the feedback: one round trip, and the row lock makes concurrent
-- requests of one sender count exactly. Every attempt counts, refused ones included.
CREATE TABLE feedback.quota (
    sender text PRIMARY KEY,
    minute_start timestamptz NOT NULL,
    minute_count integer NOT NULL,
    day_start timestamptz NOT NULL,
    day_count integer NOT NULL
);
DROP INDEX feedback.items_address_created;
