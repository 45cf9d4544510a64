-- A passkey also completes a sign-in waiting for its second factor, and re-authenticates a
-- session before a sensitive action: each ceremony's challenge is spent by its own purpose.
ALTER TABLE auth.webauthn_challenges DROP CONSTRAINT webauthn_challenges_purpose_check;
ALTER TABLE auth.webauthn_challenges
    ADD CONSTRAINT webauthn_challenges_purpose_check
    CHECK (purpose IN ('register', 'login', 'second-factor', 'reauthenticate'));
