#!/usr/bin/env bash
# The checks that need no build: the format lint, and that no server module imports
# Foundation (FoundationEssentials is what they use: Foundation links ICU's data, which made
# each static service binary 2.5 times the size and held 4 MB more resident per idle process,
# measured with bench/run.sh). PierModels is shared with the server, so it counts.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
swift format lint --strict -r Client Shared Services Tests Tools bench Plugins Package.swift
if found=$(grep -rln --include=*.swift '^import Foundation$' Client/Sources/PierModels Shared Services Plugins/RemoteConfig/Sources/RemoteConfig); then
  echo "lint: these server files import Foundation; import FoundationEssentials as the others do:" >&2
  echo "$found" >&2
  exit 1
fi
