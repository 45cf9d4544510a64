#!/usr/bin/env bash
# The console in a real browser (Tests/Browser/console_browser.py): headless Chromium and its
# driver from Debian (scripts/setup.sh installs them), Selenium from PyPI. Starts the gateway
# with auth, feedback, subscriptions and the console on a fresh database, seeds a support
# account, a customer with feedback (one item full of hostile text), a plan and a month of its
# App Store subscriptions, and drives the console; auth mails through an SMTP server (aiosmtpd,
# from PyPI) that keeps them as files. Screenshots land in .pier/screenshots/;
# `scripts/browser.sh --update-docs` also copies them to docs/console/ for the README.
set -euo pipefail
cd "$(dirname "$0")/.."
# Selenium drives the browser; aiosmtpd is the SMTP server the replies are mailed to.
scripts/python-modules.sh selenium aiosmtpd
admin=$(scripts/postgres.sh url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_browser WITH (FORCE)" -c "CREATE DATABASE pier_browser" >/dev/null
work=$(mktemp -d)
port=${PIER_BROWSER_PORT:-18090}
base="http://127.0.0.1:$port"
smtp_port=${PIER_BROWSER_SMTP_PORT:-18025}
# Auth mails through a real SMTP server, which keeps each mail as a file of a maildir.
python3 -m aiosmtpd -n -l "127.0.0.1:$smtp_port" -c aiosmtpd.handlers.Mailbox "$work/maildir" > "$work/smtp.log" 2>&1 &
smtp=$!
# Webhook receivers: /ok takes every message (204), /broken refuses them (500).
hook_port=${PIER_BROWSER_HOOK_PORT:-18091}
python3 - "$hook_port" > "$work/hooks.log" 2>&1 <<'PY' &
import http.server, sys
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204 if self.path == "/ok" else 500)
        self.end_headers()
    def log_message(self, *arguments):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
PY
hooks=$!
secret="whsec_$(openssl rand -base64 32)"
export PIER_WEBHOOKS='[{"name":"backend","url":"http://127.0.0.1:'$hook_port'/ok","secret":"'$secret'"},
  {"name":"staging","url":"http://127.0.0.1:'$hook_port'/broken","secret":"'$secret'","events":["user.created"]}]'
export PIER_DATABASE_URL="${admin%/*}/pier_browser" PIER_PORT=$port PIER_DATA_DIR="$work" PIER_LOG_LEVEL=warning
export PIER_AUTH_SMTP_URL="smtp://127.0.0.1:$smtp_port" PIER_AUTH_MAIL_POLL_S=1
bin=$(swift build --show-bin-path)
"$bin/pier-gateway" serve --embed auth,feedback,subscriptions,console,config --migrate > "$work/gateway.log" 2>&1 &
pid=$!
trap 'kill $pid $smtp $hooks 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 600); do curl -sf "$base/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "$base/readyz" >/dev/null || { echo "browser: the gateway did not become ready; its log:" >&2; cat "$work/gateway.log" >&2; exit 1; }

json() { curl -sf -H 'Content-Type: application/json' "$@"; }
token() { python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])'; }
password="a console passphrase"
PIER_ADMIN_PASSWORD="the operator's passphrase" "$bin/pier-auth" create-admin --email owner@example.com >/dev/null
signed=$(json "$base/auth/login" -d '{"email":"owner@example.com","password":"the operator'"'"'s passphrase"}')
admin_token=$(token <<<"$signed")
# The admin role needs a second factor (the default PIER_AUTH_REQUIRE_MFA_FOR_ROLES): the owner sets
# up an authenticator app over the API (its code by Tests/Interop/totp.py, RFC 6238 alone), and
# the session's next token carries it; in the browser, support sets one up through the console.
# A team account's first one waits for the link mailed when it asks (403 until it is opened).
asked=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/auth/mfa/totp" -H "Authorization: Bearer $admin_token")
[ "$asked" = 403 ] || { echo "browser: the owner's first second factor was not held for approval: $asked" >&2; exit 1; }
approval=$(python3 Tests/Interop/mailed_link.py "$work/maildir" owner@example.com /auth/mfa/approve)
json "$base/auth/mfa/approve" -d '{"token":"'"${approval#*token=}"'"}' >/dev/null
admin_secret=$(json -X POST "$base/auth/mfa/totp" -H "Authorization: Bearer $admin_token" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
json "$base/auth/mfa/totp/confirm" -H "Authorization: Bearer $admin_token" \
  -d '{"code":"'"$(python3 Tests/Interop/totp.py "$admin_secret")"'"}' >/dev/null
refresh=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["refreshToken"])' <<<"$signed")
admin_token=$(json "$base/auth/refresh" -d '{"refreshToken":"'"$refresh"'"}' | token)
json "$base/subscriptions/plans" -H "Authorization: Bearer $admin_token" \
  -d '{"id":"pro-monthly","name":"Pro","price":499,"currency":"USD","billingPeriod":"P1M","trialPeriod":"P7D","entitlements":["pro"],"appStoreProductIds":["pier.pro.monthly"]}' >/dev/null
# A month of App Store subscriptions as Apple signs them (no account of this test owns them): a
# subscriber every six hours, a free week, then a paid month.
psql "$PIER_DATABASE_URL" -q <<'SQL'
INSERT INTO subscriptions.appstore_transactions (transaction_id, original_transaction_id, product_id, purchase_date,
    expires_date, offer_type, environment, signed_date, payload)
SELECT n || '-' || k, n || '-0', 'pier.pro.monthly', starts,
    starts + CASE WHEN k = 0 THEN interval '7 days' ELSE interval '30 days' END, CASE WHEN k = 0 THEN 1 END,
    'production', starts, '{}'
FROM generate_series(1, 120) AS n, generate_series(0, 1) AS k,
    LATERAL (SELECT now() - make_interval(hours => n * 6) + k * interval '7 days' AS starts) AS period
WHERE starts <= now();
SQL
json "$base/auth/register" -d '{"email":"sam@example.com","password":"'"$password"'","displayName":"Sam Support"}' >/dev/null
psql "$PIER_DATABASE_URL" -qc "UPDATE auth.users SET email_verified_at = now() WHERE email = 'sam@example.com'"
"$bin/pier-auth" set-role --email sam@example.com --role support >/dev/null
customer_token=$(json "$base/auth/register" -d '{"email":"casey@example.com","password":"'"$password"'","displayName":"Casey Customer"}' | token)
psql "$PIER_DATABASE_URL" -qc "UPDATE auth.users SET email_verified_at = now() WHERE email = 'casey@example.com'"
json "$base/feedback" -H "Authorization: Bearer $customer_token" \
  -d '{"message":"The export button crashes on iPad when the list is long","category":"bug","platform":"ipados","appVersion":"2.4.1","rating":2}' >/dev/null
json "$base/feedback" -H "X-Installation-ID: browser-test" \
  -d '{"message":"<script>alert(1)</script> \"><img src=x onerror=alert(2)> javascript:alert(3) abc\u202efdp.exe","name":"\"><svg onload=alert(4)>","metadata":{"build":"<img src=x onerror=alert(5)>"}}' >/dev/null
json "$base/feedback" -d '{"message":"Love the new widgets!","category":"praise","platform":"ios","rating":5}' >/dev/null

shots=.pier/screenshots
PIER_BIN="$bin" PIER_MAILDIR="$work/maildir" PIER_CLIENT_HOME="$work/client" \
  PIER_BROWSER_ADMIN_EMAIL=owner@example.com PIER_BROWSER_ADMIN_PASSWORD="the operator's passphrase" \
  PIER_BROWSER_ADMIN_TOTP_SECRET="$admin_secret" \
  python3 Tests/Browser/console_browser.py "$base" "$shots" sam@example.com "$password" casey@example.com "$password"
# The support trial (Tests/Browser/support_trial.py): a customer known by a last name with an
# accent, and crash reports worded as people word them.
robin_token=$(json "$base/auth/register" -d '{"email":"robin.zielinski@northwind.example","password":"'"$password"'","displayName":"Robin Zieliński"}' | token)
json "$base/feedback" -H "Authorization: Bearer $robin_token" \
  -d '{"message":"The app crashes when I open a long list","category":"bug","platform":"ios","appVersion":"2.4.1","locale":"en-GB"}' >/dev/null
json "$base/feedback" -H "X-Installation-ID: browser-trial" \
  -d '{"message":"Crashing on launch since 2.4","category":"bug","platform":"ios","name":"Alex"}' >/dev/null
json "$base/feedback" -H "X-Installation-ID: browser-trial" \
  -d '{"message":"Notifications arrive an hour late","category":"bug","platform":"android"}' >/dev/null
python3 Tests/Browser/support_trial.py "$base" "$shots" owner@example.com "the operator's passphrase" "$admin_secret"
if [ "${1:-}" = "--update-docs" ]; then
  mkdir -p docs/console
  cp "$shots"/*.png docs/console/
  echo "browser: screenshots copied to docs/console/"
fi
