#!/usr/bin/env bash
# Makes the Python modules named importable by `python3` (the one on PATH, a pyenv's included):
# pip first, then pip past Debian's "externally managed" guard, then Debian's python3-<module>.
# Used by the scripts that drive pages (Selenium) and mail (aiosmtpd). Idempotent.
set -euo pipefail
for module in "$@"; do
  python3 -c "import $module" 2>/dev/null && continue
  python3 -m pip install -q "$module" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "$module" 2>/dev/null \
    || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "python3-$module" >/dev/null; }
  python3 -c "import $module" || { echo "python-modules: $module cannot be imported by $(command -v python3)" >&2; exit 1; }
done
