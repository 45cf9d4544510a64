-- Sign in with Apple's refresh token of each Apple identity, sealed (AES-256-GCM with the key of
-- PIER_AUTH_MFA_KEY_FILE, bound to the identity's subject), kept to revoke it when the identity
-- goes: App Store Review Guideline 5.1.1(v) asks an app that deletes an account to revoke its
-- tokens. Every way an identity goes (the account deleted, Apple unlinked, an address claimed by
-- its owner, a token replaced) queues its revocation in the same transaction, by trigger.
ALTER TABLE auth.identities ADD COLUMN apple_refresh_token bytea;

CREATE TABLE auth.apple_revocations (
    id bigserial PRIMARY KEY,
    subject text NOT NULL,
    sealed_token bytea,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    failed_at timestamptz,
    last_error text
);
CREATE INDEX apple_revocations_due ON auth.apple_revocations (next_attempt_at)
    WHERE revoked_at IS NULL AND failed_at IS NULL;

CREATE FUNCTION auth.queue_apple_revocation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.provider = 'apple' AND OLD.apple_refresh_token IS NOT NULL
        AND (TG_OP = 'DELETE' OR NEW.apple_refresh_token IS DISTINCT FROM OLD.apple_refresh_token) THEN
        INSERT INTO auth.apple_revocations (subject, sealed_token) VALUES (OLD.subject, OLD.apple_refresh_token);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER identities_apple_revocation
    AFTER DELETE OR UPDATE OF apple_refresh_token ON auth.identities
    FOR EACH ROW EXECUTE FUNCTION auth.queue_apple_revocation();
