# Every developer entry point. `make run` and `make test` are the two a
# newcomer needs; `make help` lists the others, the README explains them.

GO       ?= go
BIN      := bin/plantstore
PKG      := github.com/plantstore/plantstore

# The version stamped into the binary and the image: the nearest tag (git
# describe, e.g. v0.1.0 or v0.1.0-3-gabc1234). A checkout where no tag is
# reachable (a clone without tags) gets the latest release in CHANGELOG.md
# and the commit, e.g. v0.1.0-gabc1234, never a bare commit hash.
RELEASE := v$(shell sed -n 's/^\#\# \[\([0-9][^]]*\)\].*/\1/p' CHANGELOG.md 2>/dev/null | head -n 1)
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --dirty 2>/dev/null || \
	echo "$(RELEASE)-g$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git rev-parse --git-dir >/dev/null 2>&1 && { git diff --quiet HEAD || echo -dirty; })")
endif
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION) -X $(PKG)/internal/buildinfo.Revision=$(REVISION)

# Development settings for `make run`; never use this token anywhere real.
# Webhook endpoints can be made through the API and may be plain-http
# receivers on this machine (tools/webhookecho), so that a newcomer sees a
# delivery without a certificate; a real deployment keeps the guard on.
# Both listeners are on the loopback interface: the development token is
# public, and the admin listener has no auth at all (PUT /loglevel).
DEV_TOKEN  ?= dev-token
HTTP_ADDR  ?= 127.0.0.1:8080
ADMIN_ADDR ?= 127.0.0.1:9090
DATA_DIR   ?= ./data

# The URL the printed curl line uses: an address without a host (:8080)
# listens on every interface, localhost among them.
api_url = http://$(if $(filter :%,$(HTTP_ADDR)),localhost)$(HTTP_ADDR)

# The image `make docker-build` makes, tagged with the version (the tag
# deploy/k8s names for a release) and latest, and `make docker-run` runs.
IMAGE       ?= plantstore
DATA_VOLUME ?= plantstore-data
# Names this build's build-stage image, which the classic builder leaves
# behind untagged (see the Dockerfile), so that exactly it is removed.
BUILD_ID    := $(shell od -An -N8 -tx1 /dev/urandom | tr -d ' \n')

# The test runner, pinned: gotestsum runs `go test -json` and ends with a
# summary of every skipped and failed test with its output, so a skipped
# test is seen without -v. Under CI=true a skipped test fails the run.
GOTESTSUM := gotest.tools/gotestsum@v1.13.0
PKGS      ?= ./...
NO_SKIPS_IN_CI := sh -c "test \"$$CI\" != true || test \"$$TESTS_SKIPPED\" = 0 || { echo CI=true: $$TESTS_SKIPPED skipped, every test must run in CI; exit 1; }"

# Linters, pinned, fetched from the Go module proxy on first use.
# golangci-lint runs staticcheck among others (config: .golangci.yml).
# govulncheck v1.9.0 needs a golang.org/x/telemetry version that the proxy
# refuses, so v1.8.0 it is. GOVULNDB may point at a mirror of vuln.go.dev
# (a file:// copy offline).
GOLANGCI_LINT := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
GOVULNCHECK   := golang.org/x/vuln/cmd/govulncheck@v1.8.0
GOVULNDB      ?= https://vuln.go.dev

.PHONY: help version build run test test-short lint bench chaos docker-build docker-run clean

help: ## list the targets
	@echo "make TARGET [VARIABLE=value ...]; targets:"
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/  \1\t\2/p' $(MAKEFILE_LIST) | expand -t 16
	@echo "variables: HTTP_ADDR=$(HTTP_ADDR) ADMIN_ADDR=$(ADMIN_ADDR) DATA_DIR=$(DATA_DIR) DEV_TOKEN=$(DEV_TOKEN) VERSION=$(VERSION) IMAGE=$(IMAGE) PKGS=$(PKGS)"

version: ## print the version builds and images get (the image tag of make docker-build)
	@echo $(VERSION)

build: ## a static binary in bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/plantstore

# GOBIN as go install uses it: $GOBIN, else $(go env GOPATH)/bin.
.PHONY: install
install: build ## copy the binary to GOBIN (default: GOPATH/bin), for plantstore on PATH
	@dest="$$($(GO) env GOBIN)"; dest="$${dest:-$$($(GO) env GOPATH)/bin}"; \
	mkdir -p "$$dest" && cp $(BIN) "$$dest/plantstore" && echo "plantstore: installed $$dest/plantstore"

# The program says "serving" itself once its start succeeded (or one line
# saying why not); until then this only says what it is starting.
run: build ## serve on HTTP_ADDR (admin on ADMIN_ADDR) with the development token, plants in DATA_DIR
	@echo "plantstore: starting on $(HTTP_ADDR) (admin $(ADMIN_ADDR)) with token $(DEV_TOKEN), plants kept in $(DATA_DIR)/plants.db. Once it logs \"serving\", try:"
	@echo "  curl -i -H 'Authorization: Bearer $(DEV_TOKEN)' -H 'Content-Type: application/json' -d '{\"id\":1,\"name\":\"Monstera\",\"tag\":\"tropical\"}' $(api_url)/plants"
	PLANTSTORE_TOKENS=$(DEV_TOKEN) PLANTSTORE_HTTP_ADDR=$(HTTP_ADDR) PLANTSTORE_ADMIN_ADDR=$(ADMIN_ADDR) \
	PLANTSTORE_STORE=bolt PLANTSTORE_DATA_DIR=$(DATA_DIR) PLANTSTORE_LOG_FORMAT=console \
	PLANTSTORE_WEBHOOKS_API=true PLANTSTORE_WEBHOOKS_ALLOW_PRIVATE=true PLANTSTORE_WEBHOOKS_ALLOW_HTTP=true \
	"$(abspath $(BIN))"

test: ## every test (or those of PKGS), with the race detector; ends with the skipped ones and why
	$(GO) run $(GOTESTSUM) --format pkgname --post-run-command '$(NO_SKIPS_IN_CI)' -- -race -count=1 -timeout 30m $(PKGS)

# The inner loop: every unit and in-process test; a test that builds the
# image, starts a control plane, a chaos cluster, a replicated PostgreSQL
# pair, Docker or the built binary skips under -short (internal/testmode). Those skips are expected here: the
# summary counts them without listing them, and the CI=true check that make
# test runs afterwards is left out. A race-detector test binary waits a
# second before it exits, for reports from goroutines still running; the
# inner loop, thirty-odd packages, does without that wait (atexit_sleep_ms;
# a race seen while the tests run is reported as ever), make test keeps it.
# These tests mostly wait (on PostgreSQL's disk, on loopback sockets) rather
# than compute, so twice as many packages as processors run at once
# (SHORT_PARALLEL); make test keeps go test's default, one per processor,
# since its image builds and clusters do compute.
SHORT_PARALLEL ?= $(shell echo $$(( 2 * $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) )))
test-short: ## the inner loop: every unit and in-process test (go test -short), with the race detector
	GORACE="atexit_sleep_ms=0 $$GORACE" $(GO) run $(GOTESTSUM) --format pkgname --hide-summary=skipped -- -short -race -count=1 -p $(SHORT_PARALLEL) -timeout 10m $(PKGS)

lint: ## gofmt, go vet, golangci-lint, govulncheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(GOLANGCI_LINT) run ./...
	@scripts/vulncheck.sh '$(GO) run $(GOVULNCHECK)' '$(GOVULNDB)'

# The load benchmark: creates (POST /plants) on each store at 1, 8, 32 and
# 128 connections, 5 s each; it says what it measures first, then a line per
# step as it goes, then the table. The builds before that take a while on a
# cold cache, hence the line that says so first. Postgres is included when
# PLANTSTORE_POSTGRES_URL is set. BENCHFLAGS="-stores bolt -conns 32
# -duration 10s" narrows it (go run ./tools/loadbench -h lists the flags).
bench: ## the load benchmark: creates per second, p50, p99, peak RSS per store and concurrency (docs/performance.md)
	@echo "make bench: building the load benchmark, then plantstore (a minute or two without a warm build cache); it says what it measures once built"
	$(GO) run ./tools/loadbench $(BENCHFLAGS)

# The fault-injection test (docs/reliability.md) for as long as asked: three
# replicas on PostgreSQL behind HAProxy, the same on a primary and a
# synchronous standby under Patroni, then one bolt replica, under faults,
# the history checked by Porcupine. make test runs its short version.
# CHAOS_SEED=<n> replays a run's choices; CHAOS_ARTIFACTS=<dir> keeps the
# logs, the history, the summary and (on failure) the visualisation. No race
# detector: a long run's history is large, and make test runs it under -race.
CHAOS_DURATION ?= 10m
chaos: ## the fault-injection test for CHAOS_DURATION (default 10m) per store (docs/reliability.md)
	CHAOS_DURATION=$(CHAOS_DURATION) $(GO) test -count=1 -v -timeout 3h -run '^TestChaos' ./internal/chaos

# The build stage's image is removed whether the build succeeded or not:
# nothing of the build is left behind but the tagged image.
docker-build: ## the image, tagged IMAGE:VERSION and IMAGE:latest
	@status=0; docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg BUILD_ID=$(BUILD_ID) -t $(IMAGE):$(VERSION) -t $(IMAGE):latest . || status=$$?; \
	docker image prune --force --filter label=org.plantstore.build-stage=$(BUILD_ID) >/dev/null; \
	exit $$status

# The image as users run it: read-only root filesystem, data on a named
# volume, both ports on localhost only; docker stop waits out the drain and
# shutdown (5 s + 20 s by default) before it kills. Ctrl-C stops it gracefully.
docker-run: docker-build ## build the image and run it on 127.0.0.1:8080 (admin 127.0.0.1:9090)
	@echo "plantstore: starting the container on 127.0.0.1:8080 (admin 127.0.0.1:9090) with token $(DEV_TOKEN). Once it logs \"serving\", try:"
	@echo "  curl -i -H 'Authorization: Bearer $(DEV_TOKEN)' -H 'Content-Type: application/json' -d '{\"id\":1,\"name\":\"Monstera\",\"tag\":\"tropical\"}' http://127.0.0.1:8080/plants"
	docker run --rm --name plantstore --read-only --stop-timeout 30 \
		-e PLANTSTORE_TOKENS=$(DEV_TOKEN) -e PLANTSTORE_LOG_FORMAT=console \
		-v $(DATA_VOLUME):/var/lib/plantstore \
		-p 127.0.0.1:8080:8080 -p 127.0.0.1:9090:9090 \
		$(IMAGE):$(VERSION)

# Only what `make build` and `make run` made: the binary, and the bolt file
# in DATA_DIR (the directory too once it is empty). Never a whole directory.
clean: ## remove the binary and the development data (DATA_DIR/plants.db)
	rm -f $(BIN) $(DATA_DIR)/plants.db
	rmdir $(dir $(BIN)) $(DATA_DIR) 2>/dev/null || true
