#!/usr/bin/env bash
# Runs every test against a real PostgreSQL that this script starts under .pier/:
# unit and integration suites (swift test), then the suites that restart the server, an app's
# package outside the repository built on PierClient alone (scripts/client-package.sh), then the
# interoperability check of issued tokens with PyJWT against the live pier-auth executable, the
# console in headless Chromium (scripts/browser.sh),
# the deployment checks, and the compose stack in real containers (scripts/containers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/postgres.sh start
export PIER_TEST_DATABASE_URL=$(scripts/postgres.sh url)
export SWIFT_BACKTRACE=enable=no

swift format lint --strict -r Client Shared Services Tests Tools bench Package.swift
swift build --build-tests -Xswiftc -warnings-as-errors
swift test --skip-build --skip RestartTests --skip FeedbackExportMemoryTests
# Suites that restart the shared server, or measure this process's memory, run one at a
# time, after everything else.
for suite in PostgresTests.RestartTests AuthTests.AuthRestartTests; do
  PIER_TEST_RESTART=1 swift test --skip-build --filter "$suite"
done
PIER_TEST_ISOLATED=1 swift test --skip-build --filter FeedbackTests.FeedbackExportMemoryTests
scripts/client-package.sh
scripts/interop.sh
scripts/browser.sh
scripts/fuzz.sh
scripts/check-deploy.sh
scripts/check-root-home.sh
scripts/separate-hosts.sh
scripts/containers.sh
echo "all tests passed"
