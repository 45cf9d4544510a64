"""Remote config over HTTP, as an app and a team use it, against the stock `pier-gateway` hosting
Pier's plugins and this one on a real database (scripts/plugin-outside.sh starts it):
publishing, what each caller gets (locale, rollout, an entitlement granted by the team), ETag
and 304, conflicts and refusals, rollback, the audit log, the API document, and the plugin's
event sent by Pier's webhooks to a receiver on PIER_PLUGIN_HOOK_PORT (which PIER_WEBHOOKS names).

    python3 http_test.py BASE_URL ADMIN_EMAIL ADMIN_PASSWORD
"""
import json
import sys
import urllib.error
import urllib.request

base, admin_email, admin_password = sys.argv[1:4]
failures = []

# The app's backend, receiving webhooks: every message it is sent, in order.
import http.server  # noqa: E402
import threading  # noqa: E402

received = []


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        received.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *arguments):
        pass


hook_port = int(__import__("os").environ.get("PIER_PLUGIN_HOOK_PORT", "0"))
if hook_port:
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", hook_port), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def call(method, path, body=None, token=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request) as response:
            raw = response.read()
            return response.status, (json.loads(raw) if raw else None), dict(response.headers)
    except urllib.error.HTTPError as error:
        raw = error.read()
        return error.code, (json.loads(raw) if raw else None), dict(error.headers)


def session(email, password, register=False):
    if register:
        status, _, _ = call("POST", "/auth/register", {"email": email, "password": password})
        check(status == 201, "registered " + email)
    status, body, _ = call("POST", "/auth/login", {"email": email, "password": password})
    check(status == 200, "signed in " + email + ": %d" % status)
    return body["accessToken"], body["user"]["id"]


admin, _ = session(admin_email, admin_password)
status, body, _ = call("GET", "/config")
check(status == 200 and body == {"version": 0, "values": {}}, "before any publication: version 0, no values: %r" % body)

parameters = [
    {"key": "new_paywall", "type": "bool", "defaultValue": False, "rules": [
        {"name": "Pro users", "when": {"entitlements": ["pro"]}, "value": True},
        {"name": "Everyone on Android", "when": {"platforms": ["android"], "rolloutPercent": 100}, "value": True}]},
    {"key": "welcome", "type": "string", "defaultValue": "Hello", "rules": [
        {"name": "French", "when": {"locales": ["fr"]}, "value": "Bonjour"}]},
    {"key": "limits", "type": "json", "defaultValue": {"items": 10}},
]
status, published, _ = call("POST", "/config/versions", {"basedOn": 0, "parameters": parameters, "note": "first"}, admin)
check(status == 201 and published["version"] == 1, "published version 1: %d %r" % (status, published))

status, body, headers = call("GET", "/config", headers={"Accept-Language": "fr-CA,fr;q=0.8", "X-Installation-ID": "i-1"})
check(body["values"] == {"new_paywall": False, "welcome": "Bonjour", "limits": {"items": 10}}, "French: %r" % body)
tag = headers.get("ETag")
status, _, _ = call("GET", "/config", headers={"Accept-Language": "fr-CA", "If-None-Match": tag})
check(status == 304, "the same answer again is 304: %d" % status)
status, body, _ = call("GET", "/config", headers={"X-App-Platform": "android", "X-Installation-ID": "i-2"})
check(body["values"]["new_paywall"] is True and body["values"]["welcome"] == "Hello", "Android: %r" % body)

# An entitlement granted by the team flips the flag for that account (through the
# subscriptions plugin's capability).
user, user_id = session("casey@example.com", "a long enough passphrase", register=True)
status, body, _ = call("GET", "/config", token=user)
check(body["values"]["new_paywall"] is False, "before the grant: %r" % body)
status, _, _ = call("POST", "/subscriptions/plans", {"id": "pro-monthly", "name": "Pro", "price": 499, "currency": "USD",
                                                     "billingPeriod": "P1M", "entitlements": ["pro"]}, admin)
check(status == 201, "a plan: %d" % status)
status, grant, _ = call("POST", "/subscriptions/grants", {"userId": user_id, "planId": "pro-monthly", "duration": "P1M",
                                                          "reason": "beta tester"}, admin)
check(status == 201, "a grant: %d" % status)
status, body, _ = call("GET", "/config", token=user)
check(body["values"]["new_paywall"] is True, "after the grant: %r" % body)
status, preview, _ = call("POST", "/config/preview", {"userId": user_id}, admin)
check(preview["reasons"]["new_paywall"] == "Pro users" and preview["entitlements"] == ["pro"], "why: %r" % preview)

# Refusals: edited from an older version, values of the wrong type, hostile keys; support reads
# but does not publish; anonymous callers neither.
status, body, _ = call("POST", "/config/versions", {"basedOn": 0, "parameters": parameters}, admin)
check(status == 409 and body["code"] == "conflict", "a stale edit is 409: %d" % status)
status, body, _ = call("POST", "/config/versions", {"basedOn": 1, "parameters": [
    {"key": "<script>", "type": "number", "defaultValue": "ten"}]}, admin)
fields = sorted(error["field"] for error in (body or {}).get("errors", []))
check(status == 422 and fields == ["parameters[0].defaultValue", "parameters[0].key"], "refused, each field named: %r" % body)
status, _, _ = call("POST", "/config/versions", {"basedOn": 1, "parameters": []})
check(status == 401, "anonymous publication: %d" % status)
status, _, _ = call("GET", "/config/versions", token=user)
check(status == 403, "a user does not read the versions: %d" % status)

# A second version, then a rollback to the first: a third version that restores it.
changed = [dict(parameters[1], defaultValue="Hi")] + parameters[:1]
status, second, _ = call("POST", "/config/versions", {"basedOn": 1, "parameters": changed, "note": "shorter"}, admin)
check(status == 201 and second["version"] == 2, "version 2: %r" % second)
status, body, _ = call("GET", "/config")
check(body["version"] == 2 and body["values"]["welcome"] == "Hi" and "limits" not in body["values"], "v2 served: %r" % body)
status, third, _ = call("POST", "/config/versions/1/rollback", token=admin)
check(status == 201 and third["version"] == 3 and third["restores"] == 1, "rolled back: %r" % third)
status, body, _ = call("GET", "/config")
check(body["version"] == 3 and body["values"]["welcome"] == "Hello", "the first version's values again: %r" % body)
status, _, _ = call("POST", "/config/versions/99/rollback", token=admin)
check(status == 404, "no version 99: %d" % status)
status, _, _ = call("GET", "/config/versions/abc", token=admin)
check(status == 404, "nothing lives at a version that is not a number: %d" % status)
status, versions, _ = call("GET", "/config/versions", token=admin)
check([v["version"] for v in versions["items"]] == [3, 2, 1], "the history, newest first: %r" % versions)

# What the team did, in the plugin's audit log; the plugin's endpoints in the API document.
status, audit, _ = call("GET", "/config/audit", token=admin)
actions = [entry["action"] for entry in (audit or {}).get("items", [])]
check(actions[:3] == ["config.rolled_back", "config.published", "config.published"], "the audit log: %r" % actions)
status, filtered, _ = call("GET", "/config/audit?action=config.rolled_back", token=admin)
check(status == 200 and [e["action"] for e in filtered["items"]] == ["config.rolled_back"], "filtered by the plugin's action")
status, _, _ = call("GET", "/config/audit?action=config.nonsense", token=admin)
check(status == 422, "an action nobody declares is refused: %d" % status)
status, document, _ = call("GET", "/openapi.json")
paths = document.get("paths", {})
check("/config" in paths and "/config/versions/{version}/rollback" in paths and "/feedback" in paths,
      "the API document holds the plugin's endpoints beside Pier's")

# The app's side, on PierClient: the client reads the flags as the signed-in customer, asks
# again (304: unchanged), and a cold start without the network reads the kept file.
import os
import subprocess
import tempfile
check_binary = os.environ.get("CONFIG_CHECK")
if check_binary:
    kept = os.path.join(tempfile.mkdtemp(), "config.json")
    online = subprocess.run([check_binary, base, kept, "casey@example.com", "a long enough passphrase"],
                            capture_output=True, text=True)
    check(online.stdout.split() == ["3", "true", "Hello", "unchanged"], "the client's values: %r %s" % (online.stdout, online.stderr))
    offline = subprocess.run([check_binary, "http://127.0.0.1:9", kept], capture_output=True, text=True)
    check(offline.stdout.split() == ["3", "true", "Hello", "offline"], "a cold start offline: %r %s" % (offline.stdout, offline.stderr))

# Pushed to a running app: the client follows its user's stream and asks again when told; the
# time from a publication (or the grant's end) to the app holding the new value, 20 times.
if check_binary:
    import queue
    import threading
    import time
    watcher = subprocess.Popen([check_binary, "watch", base, "casey@example.com", "a long enough passphrase",
                                "live_flag,new_paywall"], stdout=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.split()) for line in watcher.stdout], daemon=True).start()

    def next_line(timeout=10):
        try:
            return lines.get(timeout=timeout)
        except queue.Empty:
            return None
    first = next_line()
    check(first is not None and first[0] == "3", "the running app reads the config: %r" % first)
    latest, delays = 3, []
    for n in range(20):
        flag = {"key": "live_flag", "type": "bool", "defaultValue": n % 2 == 0}
        started = time.monotonic()
        status, body, _ = call("POST", "/config/versions", {"basedOn": latest, "parameters": parameters + [flag]}, admin)
        check(status == 201, "publication %d: %d" % (n, status))
        latest = body["version"]
        while True:
            line = next_line()
            if line is None or line[0] == str(latest):
                break
        check(line is not None and ("live_flag=%s" % str(n % 2 == 0).lower()) in line, "pushed %d: %r" % (n, line))
        delays.append(time.monotonic() - started)
    delays.sort()
    print("remote config: a publication reaches a running app in %.0f ms p50, %.0f ms p99 (max of 20)"
          % (delays[len(delays) // 2] * 1000, delays[-1] * 1000))
    check(delays[len(delays) // 2] < 1.0, "a publication reaches the app within a second at the median")
    # Support ends the grant, then grants the plan again: the flag follows in the running app.
    support_email = os.environ.get("PIER_PLUGIN_SUPPORT_EMAIL")
    staff = session(support_email, os.environ["PIER_PLUGIN_SUPPORT_PASSWORD"])[0] if support_email else admin
    started = time.monotonic()
    status, _, _ = call("DELETE", "/subscriptions/grants/" + grant["id"], token=staff)
    check(status == 200, "the grant revoked: %d" % status)
    while True:
        line = next_line()
        if line is None or "new_paywall=false" in line:
            break
    check(line is not None, "the revoked entitlement turns the flag off in the running app")
    print("remote config: the grant's end reached the running app in %.0f ms" % ((time.monotonic() - started) * 1000))
    started = time.monotonic()
    status, _, _ = call("POST", "/subscriptions/grants", {"userId": user_id, "planId": "pro-monthly", "duration": "P1M",
                                                          "reason": "support's goodwill"}, staff)
    check(status == 201, "support grants the plan: %d" % status)
    while True:
        line = next_line()
        if line is None or "new_paywall=true" in line:
            break
    elapsed = time.monotonic() - started
    check(line is not None and elapsed < 1.0, "a grant by support turns the flag on in the running app within 1 s")
    print("remote config: a grant by %s reached the running app in %.0f ms"
          % ("support" if support_email else "an admin", elapsed * 1000))
    watcher.terminate()

# `pier-config`, the plugin's command line, as a team member uses it from a terminal.
if check_binary:
    cli = os.path.join(os.path.dirname(check_binary), "pier-config")
    home = tempfile.mkdtemp()
    environment = dict(os.environ, PIER_URL=base, XDG_CONFIG_HOME=home, PIER_PASSWORD=admin_password)

    def pier_config(*arguments):
        done = subprocess.run([cli, *arguments], env=environment, capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr
    code, out, err = pier_config("login", admin_email)
    check(code == 0 and admin_email in out, "pier-config login: %d %s %s" % (code, out, err))
    code, out, _ = pier_config("versions", "--json")
    before = json.loads(out)["items"][0]["version"] if code == 0 else 0
    check(code == 0 and before >= 23, "pier-config versions: %d" % before)
    cli_file = os.path.join(home, "parameters.json")
    with open(cli_file, "w") as handle:
        json.dump([{"key": "cli_flag", "type": "bool", "defaultValue": False,
                    "rules": [{"name": "iOS", "when": {"platforms": ["ios"]}, "value": True}]}], handle)
    code, out, err = pier_config("publish", cli_file, "--note", "from the command line")
    check(code == 0 and out.strip() == "published version %d" % (before + 1), "pier-config publish: %s %s" % (out, err))
    # `pier config …` is the same command line, run by `pier` (PIER_BINARY, Pier's own build).
    pier_binary = os.environ.get("PIER_BINARY", "")
    if os.path.exists(pier_binary):
        done = subprocess.run([pier_binary, "config", "versions", "--json"], capture_output=True, text=True,
                              env=dict(environment, PATH=os.path.dirname(cli) + ":" + os.environ.get("PATH", "")))
        listed = json.loads(done.stdout)["items"] if done.returncode == 0 else []
        check(listed and listed[0]["version"] == before + 1, "pier config versions: %d %s" % (done.returncode, done.stderr))
    code, out, _ = pier_config("show", "--platform", "ios")
    check(code == 0 and "cli_flag = true" in out, "pier-config show: %s" % out)
    code, out, _ = pier_config("preview", "--platform", "android")
    check(code == 0 and "cli_flag = false  (default)" in out, "pier-config preview: %s" % out)
    with open(cli_file, "w") as handle:
        json.dump([{"key": "bad key", "type": "bool", "defaultValue": 1}], handle)
    code, _, err = pier_config("publish", cli_file)
    check(code == 1 and "parameters[0].key" in err and "parameters[0].defaultValue" in err,
          "a refused publication names its fields, exit 1: %d %s" % (code, err))
    code, out, _ = pier_config("rollback", "1")
    check(code == 0 and "restoring 1" in out, "pier-config rollback: %s" % out)
    code, _, err = pier_config("frobnicate")
    check(code == 2, "an unknown command is a usage error: %d %s" % (code, err))

# Pier's webhooks send the plugin's event, in order of publication.
if hook_port:
    import time  # noqa: E402
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len([m for m in received if m["type"] == "config.published"]) < 3:
        time.sleep(0.1)
    versions = [m["data"]["version"] for m in received if m["type"] == "config.published"]
    check(versions[:3] == [1, 2, 3], "the webhooks sent config.published for versions 1, 2, 3 in order: %r" % versions[:5])
    status, deliveries, _ = call("GET", "/auth/webhooks/deliveries?type=config.published", token=admin)
    check(status == 200 and deliveries["items"] and deliveries["items"][0]["subject"] == "config.published",
          "the deliveries are listed under the plugin's event: %d %r" % (status, (deliveries or {}).get("items", [])[:1]))

if failures:
    print("remote config over HTTP: %d check(s) failed" % len(failures), file=sys.stderr)
    sys.exit(1)
print("remote config over HTTP: published, served per caller, granted, refused, rolled back, audited, documented")
