#!/bin/sh
# Runs once, when PostgreSQL's data directory is first initialized (docker-entrypoint-initdb.d;
# used by deploy/docker/compose.yaml and this overlay): one login role per plugin (auth,
# feedback, subscriptions, remote config) and one for the console, each owning its own schema
# and nothing else. The shared event log (schema events) belongs to auth, its owner. Two group
# roles say who else may use it: pier_event_readers read it (every other service, as every
# verifier of tokens, for the accounts' revocations; they keep their cursors in their own
# schemas), pier_event_writers also append (`feedback.created`, `subscription.updated`,
# `config.published`, …: auth's migration of the log grants that INSERT, and nothing more). A
# team's plugin joins them with one GRANT each.
# Passwords come from the secrets, never from this file. A data directory initialized before
# remote config (or the console) existed gets its role from the statements in docs/operating.md
# (Deploying, Docker).
set -eu
password() { tr -d '\n' < "/run/secrets/$1"; }
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v auth="$(password auth_db_password)" \
  -v feedback="$(password feedback_db_password)" \
  -v subscriptions="$(password subscriptions_db_password)" \
  -v console="$(password console_db_password)" \
  -v config="$(password config_db_password)" <<'SQL'
REVOKE CREATE ON DATABASE :"DBNAME" FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE ROLE pier_auth LOGIN PASSWORD :'auth';
CREATE ROLE pier_feedback LOGIN PASSWORD :'feedback';
CREATE ROLE pier_subscriptions LOGIN PASSWORD :'subscriptions';
CREATE ROLE pier_console LOGIN PASSWORD :'console';
CREATE ROLE pier_config LOGIN PASSWORD :'config';
CREATE SCHEMA auth AUTHORIZATION pier_auth;
CREATE SCHEMA feedback AUTHORIZATION pier_feedback;
CREATE SCHEMA subscriptions AUTHORIZATION pier_subscriptions;
CREATE SCHEMA console AUTHORIZATION pier_console;
CREATE SCHEMA remote_config AUTHORIZATION pier_config;
CREATE SCHEMA events AUTHORIZATION pier_auth;
-- Feedback's search ignores accents (unaccent); its role may not create an extension.
CREATE EXTENSION unaccent WITH SCHEMA feedback;
-- Readers of the event log: they may see it, and its migration ledger, but neither change it
-- nor create in its schema (their migrate jobs wait for auth's to have migrated it). Writers
-- may also append (granted by the log's migration, which finds the group here).
CREATE ROLE pier_event_readers NOLOGIN;
CREATE ROLE pier_event_writers NOLOGIN IN ROLE pier_event_readers;
GRANT pier_event_readers TO pier_console;
GRANT pier_event_writers TO pier_feedback, pier_subscriptions, pier_config;
GRANT USAGE ON SCHEMA events TO pier_event_readers;
ALTER DEFAULT PRIVILEGES FOR ROLE pier_auth IN SCHEMA events GRANT SELECT ON TABLES TO pier_event_readers;
SQL
