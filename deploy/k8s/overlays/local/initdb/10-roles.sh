#!/bin/sh
# Runs once, when PostgreSQL's data directory is first initialized (docker-entrypoint-initdb.d;
# used by deploy/docker/compose.yaml and this overlay): one login role per service and one for
# the console, each owning its own schema and nothing else. The shared event log (schema events)
# belongs to auth, its owner; the others read it (the console, as every verifier of tokens, for
# the accounts' revocations) and keep their cursors in their own schemas (feedback and
# subscriptions also append their events, `feedback.created`, `subscription.updated`, …: auth's
# migration of the log grants that INSERT, and nothing more).
# Passwords come from the secrets, never from this file. A data directory initialized before the
# console existed gets its role from the statements under "Upgrading" in the README.
set -eu
password() { tr -d '\n' < "/run/secrets/$1"; }
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v auth="$(password auth_db_password)" \
  -v feedback="$(password feedback_db_password)" \
  -v subscriptions="$(password subscriptions_db_password)" \
  -v console="$(password console_db_password)" <<'SQL'
REVOKE CREATE ON DATABASE :"DBNAME" FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE ROLE pier_auth LOGIN PASSWORD :'auth';
CREATE ROLE pier_feedback LOGIN PASSWORD :'feedback';
CREATE ROLE pier_subscriptions LOGIN PASSWORD :'subscriptions';
CREATE ROLE pier_console LOGIN PASSWORD :'console';
CREATE SCHEMA auth AUTHORIZATION pier_auth;
CREATE SCHEMA feedback AUTHORIZATION pier_feedback;
CREATE SCHEMA subscriptions AUTHORIZATION pier_subscriptions;
CREATE SCHEMA console AUTHORIZATION pier_console;
CREATE SCHEMA events AUTHORIZATION pier_auth;
-- Feedback's search ignores accents (unaccent); its role may not create an extension.
CREATE EXTENSION unaccent WITH SCHEMA feedback;
-- Readers of the event log: they may see it, and its migration ledger, but neither change it
-- nor create in its schema (their migrate jobs wait for auth's to have migrated it).
GRANT USAGE ON SCHEMA events TO pier_feedback, pier_subscriptions, pier_console;
ALTER DEFAULT PRIVILEGES FOR ROLE pier_auth IN SCHEMA events GRANT SELECT ON TABLES TO pier_feedback, pier_subscriptions, pier_console;
SQL
