-- The team finds an account by the start of any word of its display name or address ("smith"
-- finds Casey Smith, "northwind" every address at northwind.example): both, split at spaces,
-- dots, @, + and dashes, word for word (the `simple` configuration: no stemming of names).
CREATE INDEX users_words ON auth.users USING gin (
    to_tsvector('simple'::regconfig, coalesce(display_name, '') || ' ' || translate(email_key, '@.+_-', '     ')));
-- The team (`GET /auth/team`): the few accounts with a role, without reading every account.
CREATE INDEX users_team ON auth.users ((email_key COLLATE "C")) WHERE role <> 'user';
