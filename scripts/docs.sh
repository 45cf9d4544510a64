#!/usr/bin/env bash
# PierClient's reference (DocC, the toolchain's `docc`): the symbol graph of the module the debug
# build made (`swift-symbolgraph-extract`, nothing compiled again) and the catalog
# Client/Sources/PierClient/PierClient.docc, converted to .build/docs/PierClient.doccarchive with
# warnings as errors, so a documentation comment linking a symbol that does not exist (``Name``)
# fails the build of the docs. Symbols that exist on Apple platforms alone (the Keychain store,
# App Attest's DeviceCheck) are not in a Linux build: comments name them as code, not as links.
# Open the archive with Xcode, or serve it: `docc preview` does both on a Mac.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
swift build --target PierClient 2>&1 | tail -n 1
modules="$(swift build --show-bin-path)/Modules"
graphs=.build/docs/symbol-graphs
rm -rf "$graphs" .build/docs/PierClient.doccarchive
mkdir -p "$graphs"
swift-symbolgraph-extract -module-name PierClient -I "$modules" -target "$(uname -m)-unknown-linux-gnu" \
  -minimum-access-level public -output-dir "$graphs"
docc convert Client/Sources/PierClient/PierClient.docc --additional-symbol-graph-dir "$graphs" \
  --output-dir .build/docs/PierClient.doccarchive --fallback-display-name PierClient \
  --fallback-bundle-identifier dev.pier.PierClient --warnings-as-errors >.build/docs/docc.log 2>&1 \
  || { cat .build/docs/docc.log >&2; echo "docs: PierClient's documentation has broken links (above)" >&2; exit 1; }
pages=$(find .build/docs/PierClient.doccarchive/data/documentation -name '*.json' | wc -l)
echo "docs: PierClient's reference, $pages pages, no broken link: .build/docs/PierClient.doccarchive"
