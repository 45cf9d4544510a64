-- The team's roles: support beside admin. A change of role ends the account's sessions (the
-- role is in its access tokens), so nobody keeps a token of the role it had.
ALTER TABLE auth.users DROP CONSTRAINT users_role_check;
ALTER TABLE auth.users ADD CONSTRAINT users_role_check CHECK (role IN ('user', 'support', 'admin'));
CREATE INDEX users_staff ON auth.users (role) WHERE role <> 'user';

-- An account the team disabled: it cannot sign in or refresh (its sessions were ended) until it
-- is enabled again.
ALTER TABLE auth.users ADD COLUMN disabled_at timestamptz;
