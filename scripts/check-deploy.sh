#!/usr/bin/env bash
# Static checks of deploy/: the systemd units parse and reference what exists
# (systemd-analyze verify, with the install paths pointed at this build).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v systemd-analyze >/dev/null || {
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq systemd >/dev/null
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$(swift build --show-bin-path)
for unit in deploy/systemd/*.service; do
  sed -e "s|/usr/local/bin/|$bin/|" -e "s|/etc/pier/|$work/|g" "$unit" > "$work/$(basename "$unit")"
done
touch "$work/pier.env" "$work/subscriptions.env" "$work/auth-signing-key.pem"
(cd "$work" && systemd-analyze verify ./*.service)
echo "deploy: systemd units verified"
