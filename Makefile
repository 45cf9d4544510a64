# The two commands of the README, and a few conveniences.
.PHONY: run run-embedded test build bench clean

run:            ## set up, build, start PostgreSQL under .pier/, migrate and serve the stack
	deploy/local/run.sh

run-embedded:   ## the same stack in one process: pier-gateway --embed auth,feedback,subscriptions on 8080
	PIER_EMBED=1 deploy/local/run.sh

test:           ## every test, against a real PostgreSQL started under .pier/
	scripts/test.sh

build:
	swift build -c release

bench:          ## ratios against references run side by side (nginx, the bare KDF, pgbench)
	bench/run.sh
	bench/feedback.sh
	bench/subscriptions.sh
	bench/gateway.sh

clean:
	scripts/postgres.sh delete
	rm -rf .build .pier
