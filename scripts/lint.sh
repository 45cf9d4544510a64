#!/usr/bin/env bash
# The checks that need no build: the format lint, and that no server module imports
# Foundation (FoundationEssentials is what they use: Foundation links ICU's data, which made
# each static service binary 2.5 times the size and held 4 MB more resident per idle process,
# measured with bench/run.sh). PierModels is shared with the server, so it counts.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
swift format lint --strict -r Client Shared Services Tests Tools bench Plugins Package.swift
if found=$(grep -rln --include=*.swift '^import Foundation$' Client/Sources/PierModels Shared Services Plugins/RemoteConfig/Sources/RemoteConfig Plugins/Leaderboard/Sources); then
  echo "lint: these server files import Foundation; import FoundationEssentials as the others do:" >&2
  echo "$found" >&2
  exit 1
fi
# Remote config and the leaderboard are written as a team writes a plugin: each module imports
# the public plugin products (`pluginKit` in Package.swift, the product PierPlugin), its own API
# module and the toolchain's, nothing else of Pier's; and the manifest gives it no other dependency.
kit=$(sed -n '/^let pluginKit = \[/,/^\]/p' Package.swift | grep -o '"[A-Za-z]*"' | tr -d '"' | tr '\n' ' ')
[ -n "$kit" ] || { echo "lint: Package.swift has no pluginKit list" >&2; exit 1; }
for plugin in RemoteConfig Leaderboard; do
  allowed=" $kit ${plugin}API Foundation FoundationEssentials Glibc Synchronization Dispatch "
  imported=$(grep -rhoE '^(@testable |@_exported )?import [A-Za-z]+' "Plugins/$plugin/Sources/$plugin" | awk '{ print $NF }' | sort -u)
  for module in $imported; do
    case "$allowed" in
      *" $module "*) ;;
      *) echo "lint: $plugin imports $module, which is not a public plugin product (Package.swift's pluginKit)" >&2; exit 1 ;;
    esac
  done
  grep -q "name: \"$plugin\", dependencies: pluginKit.map { .target(name: \$0) } + \[\"${plugin}API\"\]," Package.swift \
    || { echo "lint: the $plugin target depends on more than pluginKit and ${plugin}API" >&2; exit 1; }
done
