# Every developer entry point. `make run` and `make test` are the two a
# newcomer needs; the README explains the rest.

GO       ?= go
BIN      := bin/plantstore
PKG      := github.com/plantstore/plantstore
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X $(PKG)/internal/buildinfo.Version=$(VERSION) -X $(PKG)/internal/buildinfo.Revision=$(REVISION)

# Development settings for `make run`; never use this token anywhere real.
DEV_TOKEN ?= dev-token
HTTP_ADDR ?= :8080
DATA_DIR  ?= ./data

# The image `make docker-build` makes, tagged with the version and latest
# (the tag deploy/k8s uses), and `make docker-run` runs.
IMAGE       ?= plantstore
DATA_VOLUME ?= plantstore-data

# Linters, pinned, fetched from the Go module proxy on first use.
# golangci-lint runs staticcheck among others (config: .golangci.yml).
# govulncheck v1.9.0 needs a golang.org/x/telemetry version that the proxy
# refuses, so v1.8.0 it is. GOVULNDB may point at a mirror of vuln.go.dev
# (a file:// copy offline).
GOLANGCI_LINT := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
GOVULNCHECK   := golang.org/x/vuln/cmd/govulncheck@v1.8.0
GOVULNDB      ?= https://vuln.go.dev

.PHONY: build run test lint bench docker-build docker-run

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/plantstore

run: build
	@echo "plantstore: serving on $(HTTP_ADDR) with token $(DEV_TOKEN), plants kept in $(DATA_DIR)/plants.db. Try:"
	@echo "  curl -i -H 'Authorization: Bearer $(DEV_TOKEN)' -H 'Content-Type: application/json' -d '{\"id\":1,\"name\":\"Monstera\",\"tag\":\"tropical\"}' http://localhost$(HTTP_ADDR)/plants"
	PLANTSTORE_TOKENS=$(DEV_TOKEN) PLANTSTORE_HTTP_ADDR=$(HTTP_ADDR) PLANTSTORE_STORE=bolt PLANTSTORE_DATA_DIR=$(DATA_DIR) \
	PLANTSTORE_LOG_FORMAT=console ./$(BIN)

test:
	$(GO) test -race -count=1 -timeout 30m ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(GOLANGCI_LINT) run ./...
	$(GO) run $(GOVULNCHECK) -db $(GOVULNDB) ./...

# The load benchmark: every store at 1, 8, 32 and 128 connections.
# Postgres is included when PLANTSTORE_POSTGRES_URL is set.
bench:
	$(GO) run ./tools/loadbench $(BENCHFLAGS)

docker-build:
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		-t $(IMAGE):$(VERSION) -t $(IMAGE):latest .

# The image as users run it: read-only root filesystem, data on a named
# volume, both ports on localhost only; docker stop waits out the drain and
# shutdown (5 s + 20 s by default) before it kills. Ctrl-C stops it gracefully.
docker-run: docker-build
	@echo "plantstore: serving on 127.0.0.1:8080 (admin 127.0.0.1:9090) with token $(DEV_TOKEN). Try:"
	@echo "  curl -i -H 'Authorization: Bearer $(DEV_TOKEN)' -H 'Content-Type: application/json' -d '{\"id\":1,\"name\":\"Monstera\",\"tag\":\"tropical\"}' http://127.0.0.1:8080/plants"
	docker run --rm --name plantstore --read-only --stop-timeout 30 \
		-e PLANTSTORE_TOKENS=$(DEV_TOKEN) -e PLANTSTORE_LOG_FORMAT=console \
		-v $(DATA_VOLUME):/var/lib/plantstore \
		-p 127.0.0.1:8080:8080 -p 127.0.0.1:9090:9090 \
		$(IMAGE):$(VERSION)
