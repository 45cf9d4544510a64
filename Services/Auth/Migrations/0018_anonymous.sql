-- Anonymous accounts: made for an installation without an address or a password, and made
-- permanent in place (the same id) by an address and password proven by a mailed link, a
-- linked Sign in with Apple or OpenID identity, or a passkey. Only an account that began
-- anonymous may be without an address; none may hold a team role while anonymous.
ALTER TABLE auth.users
    ALTER COLUMN email DROP NOT NULL,
    ALTER COLUMN email_key DROP NOT NULL,
    -- When the account began anonymous (kept once permanent: how it began).
    ADD COLUMN anonymous_at timestamptz,
    -- When an account that began anonymous became permanent.
    ADD COLUMN permanent_at timestamptz,
    ADD CONSTRAINT users_address_unless_anonymous CHECK (email IS NOT NULL OR anonymous_at IS NOT NULL),
    ADD CONSTRAINT users_staff_permanent CHECK (role = 'user' OR anonymous_at IS NULL OR permanent_at IS NOT NULL),
    ADD CONSTRAINT users_address_with_key CHECK ((email IS NULL) = (email_key IS NULL));

-- The housekeeping worker finds anonymous accounts by their start.
CREATE INDEX users_anonymous ON auth.users (anonymous_at) WHERE anonymous_at IS NOT NULL AND permanent_at IS NULL;

-- The dashboard counts the accounts kept each day.
CREATE INDEX users_permanent ON auth.users (permanent_at) WHERE permanent_at IS NOT NULL;

-- The password an anonymous account asked for with its address: it counts once the mailed
-- link (a change of address) is followed, never before.
ALTER TABLE auth.email_tokens ADD COLUMN password_hash text;

-- Anonymous sign-ups per installation and per client address, counted against the limits
-- (kept a day; a deleted account still counts).
CREATE TABLE auth.anonymous_signups (
    installation text NOT NULL,
    address text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX anonymous_signups_installation ON auth.anonymous_signups (installation, created_at);
CREATE INDEX anonymous_signups_address ON auth.anonymous_signups (address, created_at);

-- Becoming permanent is a change the account's owner sees (`isAnonymous`).
DROP TRIGGER user_updated ON auth.users;
CREATE TRIGGER user_updated AFTER UPDATE ON auth.users FOR EACH ROW
    WHEN (OLD.email IS DISTINCT FROM NEW.email OR OLD.display_name IS DISTINCT FROM NEW.display_name
        OR OLD.role IS DISTINCT FROM NEW.role OR OLD.email_verified_at IS DISTINCT FROM NEW.email_verified_at
        OR OLD.locale IS DISTINCT FROM NEW.locale OR OLD.disabled_at IS DISTINCT FROM NEW.disabled_at
        OR OLD.permanent_at IS DISTINCT FROM NEW.permanent_at)
    EXECUTE FUNCTION auth.user_updated();
