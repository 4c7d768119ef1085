# The plantstore image: a static binary on distroless, running as a numeric
# non-root user, with a read-only root filesystem in mind and its data on a
# volume. Build it with `make docker-build`, or:
#
#   docker build --build-arg VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD) -t plantstore .
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
