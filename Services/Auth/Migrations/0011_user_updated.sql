-- Every change of what an account's owner sees of it (address, name, role, verification,
-- language, disabling) appends `user.updated` in the transaction of the change: the account's
-- live stream follows it, whichever flow, replica or tool made the change.
CREATE FUNCTION auth.user_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events.events (type, payload) VALUES ('user.updated', jsonb_build_object('userId', NEW.id));
    PERFORM pg_notify('pier_events', 'user.updated');
    RETURN NULL;
END $$;

CREATE TRIGGER user_updated AFTER UPDATE ON auth.users FOR EACH ROW
    WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.display_name IS DISTINCT FROM NEW.display_name
        OR OLD.role IS DISTINCT FROM NEW.role OR OLD.email_verified_at IS DISTINCT FROM NEW.email_verified_at
        OR OLD.locale IS DISTINCT FROM NEW.locale OR OLD.disabled_at IS DISTINCT FROM NEW.disabled_at)
    EXECUTE FUNCTION auth.user_updated();
