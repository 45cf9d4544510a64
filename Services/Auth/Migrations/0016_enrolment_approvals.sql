-- A team member's first second factor needs the account's mailbox (or an admin) to agree: with
-- the password alone, whoever holds it could set up their own authenticator and be the member
-- from then on. The session that asks waits here; a mailed link (`approve-enrolment`, live while
-- that session is) or an admin approves it, for 30 minutes, to set one up.
CREATE TABLE auth.enrolment_approvals (
    session_id uuid PRIMARY KEY REFERENCES auth.sessions (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
    asked_at timestamptz NOT NULL DEFAULT now(),
    approved_at timestamptz,
    -- The admin who approved; null for the mailed link.
    approved_by uuid REFERENCES auth.users (id) ON DELETE SET NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX enrolment_approvals_user ON auth.enrolment_approvals (user_id);

ALTER TABLE auth.email_tokens DROP CONSTRAINT email_tokens_purpose_check;
ALTER TABLE auth.email_tokens
    ADD CONSTRAINT email_tokens_purpose_check
    CHECK (purpose IN ('verify', 'reset', 'change', 'cancel-change', 'approve-enrolment'));
