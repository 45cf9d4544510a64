-- Counts per UTC day of the items created that day, by what reports group them by: reports read
-- these for whole days the rollup covers and the items themselves only for the rest (today,
-- partial days at a range's edges, days being rolled up again), so they do not grow with the
-- data. Rolled up by the feedback worker (feedback.rollup_state: through which day).
CREATE TABLE feedback.daily (
    day date NOT NULL,
    category text NOT NULL,
    -- '' where the item has none.
    platform text NOT NULL,
    app_version text NOT NULL,
    status text NOT NULL,
    moderation text NOT NULL,
    items integer NOT NULL,
    ratings integer NOT NULL,
    rating_sum integer NOT NULL,
    PRIMARY KEY (day, category, platform, app_version, status, moderation)
);
-- Days whose counts changed since they were rolled up (a past item triaged): read from the items
-- until the worker rolls them up again.
CREATE TABLE feedback.daily_stale (day date PRIMARY KEY);
CREATE TABLE feedback.rollup_state (
    single boolean PRIMARY KEY DEFAULT true CHECK (single),
    through date
);
INSERT INTO feedback.rollup_state (through) VALUES (NULL);
-- The oldest open item (the triage backlog's age) at once.
CREATE INDEX items_open_created ON feedback.items (created_at)
    WHERE status IN ('new', 'triaged', 'planned', 'in_progress');
