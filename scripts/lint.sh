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
kit="$(sed -n '/^let pluginModules = \[/,/^\]/p' Package.swift | grep -o '"[A-Za-z]*"' | tr -d '"' | tr '\n' ' ')PierPlugin"
[ "$kit" != PierPlugin ] || { echo "lint: Package.swift has no pluginModules list" >&2; exit 1; }
grep -q '^let pluginKit = pluginModules + \["PierPlugin"\]$' Package.swift \
  || { echo "lint: the plugin kit is no longer pluginModules and PierPlugin" >&2; exit 1; }
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
# Every shell block the README and docs/ show says how it is run: `<!-- run: local-stack -->`
# (scripts/local-stack.sh runs it against `make run`), `<!-- run by: … -->` (the test that runs
# it) or `<!-- not run here: … -->` (the reason), on the line before it.
python3 - README.md docs/*.md <<'PY'
import re, sys
unmarked = []
for name in sys.argv[1:]:
    lines = open(name, encoding="utf-8").read().split("\n")
    for number, line in enumerate(lines):
        if re.match(r"\s*```(sh|bash|shell|console)\s*$", line):
            before = lines[number - 1].strip() if number else ""
            if not re.match(r"<!-- (run: local-stack|run by: .+|not run here: .+) -->$", before):
                unmarked.append(f"{name}:{number + 1}")
if unmarked:
    sys.exit("lint: shell blocks that say neither how they are run nor why not (<!-- run: local-stack -->, "
             "<!-- run by: … -->, <!-- not run here: … -->): " + ", ".join(unmarked))
PY
# Every setting the code reads is declared (`SettingDeclaration`, beside the code that reads it),
# and every declared one is read somewhere: `PIER_…` names the server's sources spell, against
# docs/settings.md, which is made of the declarations (EndpointDocumentTests holds it to them).
# The declarations' own files do not count as reads. The command lines' own (PIER_URL,
# PIER_PASSWORD) are docs/cli.md's; the plugin kit's (PIER_TEST_DATABASE_URL) docs/plugins.md's.
python3 - <<'PY'
import pathlib, re, sys
root = pathlib.Path(".")
def names(paths):
    found = {}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if "static let settings: [SettingDeclaration]" in text:
            continue
        for name in re.findall(r'"(PIER_[A-Z0-9_]+)', text):
            found.setdefault(name, str(path))
    return found
server = [p for folder in ("Shared", "Services", "Plugins") for p in (root / folder).rglob("*.swift")
          if "/Tests/" not in str(p) and "pier-config" not in str(p) and "PluginTesting" not in str(p)]
read = names(server)
settings = (root / "docs/settings.md").read_text(encoding="utf-8")
listed = {name for row in re.findall(r"^\| (`PIER_[^|]*)\|", settings, re.M)
          for name in re.findall(r"`(PIER_[A-Z0-9_<>]+)`", row)}
problems = [f"{n} is read ({read[n]}) but declared nowhere (SettingDeclaration; then `make openapi`)"
            for n in sorted(n for n in read if n not in listed)]
problems += [f"{n} is declared (docs/settings.md) but read nowhere"
             for n in sorted(n for n in listed if "<" not in n and n not in read)]
cli = (root / "docs/cli.md").read_text(encoding="utf-8")
for n in sorted(names(list((root / "Tools").rglob("*.swift")) + list(root.glob("Plugins/*/Sources/pier-config/*.swift")))):
    if n not in read and n not in cli:
        problems.append(f"{n}, read by a command line, is not in docs/cli.md")
if problems:
    sys.exit("lint: " + "\nlint: ".join(problems))
print(f"lint: {len(read)} settings read, each declared, and the {len(listed)} declared all read")
PY
# The layout's rules a machine can check (no source file over 400 lines, no function over 80),
# each first shown failing on a file made to break it.
python3 scripts/layout.py --self-test
