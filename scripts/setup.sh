#!/usr/bin/env bash
# Installs what Pier needs on Debian 12 when it is missing: the C libraries' -dev packages,
# pkg-config (SwiftPM finds the libraries through it) and PostgreSQL 15: what `make run` needs.
# `scripts/setup.sh --check` (what `make check` runs) adds what its suites use: Debian's Python
# and aiosmtpd, the real SMTP server of the mail suites; `--tests` (what `make test` runs) adds
# the rest the tests use. Idempotent.
set -euo pipefail
packages=(pkg-config libpq-dev libssl-dev libmicrohttpd-dev libargon2-dev libcurl4-openssl-dev libqrencode-dev libcbor-dev postgresql postgresql-contrib curl openssl)
case "${1:-}" in
  --check) packages+=(python3 python3-aiosmtpd) ;;
  --tests)
    # The test scripts (Python), a real SMTP server for the mail tests, gdb for a hung test's
    # stacks, and the console's browser test (scripts/browser.sh): headless Chromium and its WebDriver.
    packages+=(python3 python3-aiosmtpd gdb chromium chromium-driver fonts-dejavu-core) ;;
esac
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "setup: swift is not on PATH (Swift 6 toolchain required)" >&2; exit 1; }
