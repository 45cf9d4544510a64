# The two commands of the README, and a few conveniences: `make help` lists them.
.PHONY: help run run-embedded check test build bench openapi docs clean

help:           ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):[^#]*## /\1\t/' | awk -F'\t' '{ printf "  make %-14s %s\n", $$1, $$2 }'

run:            ## set up, build, start PostgreSQL under .pier/, migrate and serve the stack
	deploy/local/run.sh

run-embedded:   ## the same stack in one process: pier-gateway --embed auth,feedback,subscriptions,console,config on 8080
	PIER_EMBED=1 deploy/local/run.sh

check:          ## the inner loop (< 2 min warm): format lint, build with warnings as errors, the database suites
	scripts/check.sh

test:           ## every test, against a real PostgreSQL started under .pier/
	scripts/test.sh

build:          ## release build of every executable
	swift build -c release --static-swift-stdlib

bench:          ## ratios against references run side by side (nginx, the bare KDF, pgbench)
	bench/run.sh
	bench/feedback.sh
	bench/subscriptions.sh
	bench/gateway.sh

openapi:        ## write docs/openapi.json, docs/api-reference.md and docs/settings.md again from the declarations (tests hold them to them)
	swift build --product pier-gateway
	"$$(swift build --show-bin-path)/pier-gateway" openapi > docs/openapi.json.new && mv docs/openapi.json.new docs/openapi.json
	"$$(swift build --show-bin-path)/pier-gateway" api-reference > docs/api-reference.md.new && mv docs/api-reference.md.new docs/api-reference.md
	"$$(swift build --show-bin-path)/pier-gateway" settings-reference > docs/settings.md.new && mv docs/settings.md.new docs/settings.md

docs:           ## PierClient's reference with DocC, in .build/docs/PierClient.doccarchive (a broken link fails)
	scripts/docs.sh

clean:          ## delete the local database and the build
	scripts/postgres.sh delete
	rm -rf .build .pier
