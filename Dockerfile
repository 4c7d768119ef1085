# The plantstore image: a static binary on distroless, running as a numeric
# non-root user, with a read-only root filesystem in mind and its data on a
# volume. Build it with `make docker-build` (which also removes the build
# stage's image afterwards), or:
#
#   docker build --build-arg VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD) -t plantstore:v1.2.3 .
#
# Works with the classic builder and with BuildKit (no BuildKit-only syntax).

FROM golang:1.26-bookworm AS build
WORKDIR /src

# Modules first, in a layer of their own: it is rebuilt only when go.mod or
# go.sum change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
ARG VERSION=dev
ARG REVISION=
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w \
        -X github.com/plantstore/plantstore/internal/buildinfo.Version=${VERSION} \
        -X github.com/plantstore/plantstore/internal/buildinfo.Revision=${REVISION}" \
      -o /out/plantstore ./cmd/plantstore \
 && go clean -cache \
 && mkdir -p /out/data
# The classic builder keeps this stage's result as an untagged image of about
# 600 MB once the build is done; the label lets `make docker-build` and the
# image tests remove exactly that image afterwards
# (docker image prune --filter label=org.plantstore.build-stage=<BUILD_ID>).
# BuildKit keeps no image of a stage, and the prune then finds nothing. Last
# in the stage, so a new BUILD_ID costs no cached layer before it.
ARG BUILD_ID=
LABEL org.plantstore.build-stage="${BUILD_ID}"

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="plantstore" \
      org.opencontainers.image.description="Plant Store API" \
      org.opencontainers.image.source="https://github.com/plantstore/plantstore" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"

COPY --from=build /out/plantstore /plantstore
# The data directory belongs to the runtime user: a new named volume mounted
# here starts with this ownership, so the bolt store can create plants.db.
COPY --from=build --chown=65532:65532 /out/data /var/lib/plantstore

ENV PLANTSTORE_DATA_DIR=/var/lib/plantstore
USER 65532:65532
EXPOSE 8080 9090
VOLUME ["/var/lib/plantstore"]
# Asks the admin listener's /readyz (PLANTSTORE_ADMIN_ADDR, default :9090);
# the image has no shell and no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/plantstore", "healthcheck"]
ENTRYPOINT ["/plantstore"]
