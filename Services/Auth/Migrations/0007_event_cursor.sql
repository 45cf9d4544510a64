-- How far auth has read the shared event log (it mails the team's replies to feedback).
CREATE TABLE auth.event_cursor (
    consumer text PRIMARY KEY,
    last_event_id bigint NOT NULL
);
