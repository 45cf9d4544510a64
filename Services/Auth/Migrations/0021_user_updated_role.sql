-- `user.updated` says the account's role: a service that keeps its own list of the team (feedback,
-- whose items are assigned to team members only) follows it without reading auth's tables.
CREATE OR REPLACE FUNCTION auth.user_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events.events (type, payload)
    VALUES ('user.updated', jsonb_build_object('userId', NEW.id, 'role', NEW.role));
    PERFORM pg_notify('pier_events', 'user.updated');
    RETURN NULL;
END $$;

-- The team as it is now, told once: where such a list starts from.
INSERT INTO events.events (type, payload)
SELECT 'user.updated', jsonb_build_object('userId', id, 'role', role) FROM auth.users WHERE role <> 'user' ORDER BY created_at;
