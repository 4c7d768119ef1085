#!/usr/bin/env bash
# Creates local stand-ins for the Dockerfile's two base images on a Docker
# engine that cannot pull (the CI machine), so the unchanged Dockerfile builds:
#
#   golang:1.26-bookworm
#       a minimal Debian bookworm root (debootstrap --variant=minbase) with the
#       installed Go toolchain at /usr/local/go, the official image's GOPATH,
#       PATH and GOTOOLCHAIN, and this module's download cache baked in under
#       /go/pkg/mod/cache/download with GOPROXY=off: the Dockerfile's
#       `go mod download` then fills its layer from that cache, offline.
#   gcr.io/distroless/static-debian12:nonroot
#       a static runtime: /etc/passwd and /etc/group with nonroot (65532), CA
#       certificates and tzdata from the same Debian root, /tmp and
#       /home/nonroot, user 65532. No shell, no package manager, nothing else.
#
# Each stand-in carries a label with a key over everything it is made from
# (this script, the Debian root, and for the builder the Go version, go.mod
# and go.sum), so a re-run recreates only what is stale: the builder after
# a dependency change, both after this script changes. An image under either
# name without that label is a real one (pulled on a connected machine) and is
# left alone. FORCE=1 recreates both regardless.
#
# The Debian root is cached as a tarball in $PLANTSTORE_CI_CACHE (default
# ~/.cache/plantstore-ci), so only the first run downloads packages. Needs
# root (debootstrap) on a Debian or Ubuntu machine; installs debootstrap with
# apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly BUILDER=golang:1.26-bookworm
readonly RUNTIME=gcr.io/distroless/static-debian12:nonroot
readonly GO_MINOR=go1.26
readonly SUITE=bookworm
readonly MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly INCLUDE=ca-certificates,tzdata
readonly KEY_LABEL=org.plantstore.ci-stand-in.key
readonly CACHE=${PLANTSTORE_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plantstore-ci}

log() { printf 'ci-images: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
sha() { sha256sum | cut -c1-64; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"
command -v go >/dev/null || die "go is not on PATH"
goroot=$(go env GOROOT)
goversion=$(go env GOVERSION)
[[ $goversion == "$GO_MINOR" || $goversion == "$GO_MINOR".* ]] ||
  die "the installed Go is $goversion; the $BUILDER stand-in needs $GO_MINOR.x"

mkdir -p "$CACHE"
# One run at a time: two checkouts on one machine share the engine and cache.
exec 9>"$CACHE/lock"
flock 9

work=$(mktemp -d "$CACHE/work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# state IMAGE KEY prints "fresh", "stale", "missing" or "foreign".
state() {
  local have
  if ! have=$(docker image inspect -f "{{ index .Config.Labels \"$KEY_LABEL\" }}" "$1" 2>/dev/null); then
    echo missing
  elif [[ ${FORCE:-0} == 1 ]]; then
    echo stale
  elif [[ $have == "$2" ]]; then
    echo fresh
  elif [[ -z $have || $have == "<no value>" ]]; then
    echo foreign
  else
    echo stale
  fi
}

# rootfs builds the Debian root once and prints the cached tarball's path.
# The file name carries the debootstrap parameters, so changing them makes
# a new root instead of reusing an old one.
rootfs() {
  local arch params tarball dir
  arch=$(dpkg --print-architecture)
  params=$(printf '%s\n' "$SUITE" "$arch" "$INCLUDE" minbase | sha | cut -c1-12)
  tarball="$CACHE/debian-$SUITE-minbase-$arch-$params.tar.gz"
  if [[ -s $tarball ]]; then
    echo "$tarball"
    return
  fi
  [[ $(id -u) == 0 ]] || die "building the Debian root needs root (debootstrap)"
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
  fi
  dir="$work/debootstrap"
  log "debootstrap $SUITE ($arch, minbase, +$INCLUDE) from $MIRROR"
  if ! debootstrap --variant=minbase --arch="$arch" --include="$INCLUDE" "$SUITE" "$dir" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" "$dir/debootstrap/debootstrap.log" >&2 || true
    die "debootstrap failed"
  fi
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
  # The engine provides /dev, /proc and /sys at run time.
  tar -C "$dir" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
    -czf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$dir"
  echo "$tarball"
}

# modcache puts this module's download cache (zips, .mod and .info files, no
# extracted trees) under $1, copied from the host's module cache: it is what
# a `go mod download` against a proxy would fetch, so the image build needs
# no network. `go mod download` first fills the host cache when needed.
modcache() {
  local hostcache
  go mod download
  hostcache=$(go env GOMODCACHE)
  GOMODCACHE="$1" GOPROXY="file://$hostcache/cache/download" GOSUMDB=off GOFLAGS=-modcacherw \
    go mod download
  find "$1" -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +
  rm -rf "$1/cache/vcs"
}

# import_image NAME DIR KEY CHANGE... makes one single-layer image of DIR
# and removes the stand-in it replaces, unless something still uses it.
import_image() {
  local name=$1 dir=$2 key=$3 old
  shift 3
  local changes=(--change "LABEL $KEY_LABEL=$key")
  for c in "$@"; do changes+=(--change "$c"); done
  old=$(docker image inspect -f '{{.Id}}' "$name" 2>/dev/null || true)
  tar -C "$dir" --numeric-owner -c . | docker import "${changes[@]}" - "$name" >/dev/null
  if [[ -n $old ]]; then docker rmi "$old" >/dev/null 2>&1 || true; fi
  log "created $name, $(docker image inspect -f '{{.Size}}' "$name" | numfmt --to=si)B"
}

tarball=$(rootfs)
rootkey=$(sha <"$tarball")
scriptkey=$(sha <"${BASH_SOURCE[0]}")

# The builder: Debian root + Go toolchain + module download cache.
builderkey=$(cat <(echo "$scriptkey $rootkey $goversion") go.mod go.sum | sha)
case $(state "$BUILDER" "$builderkey") in
fresh) log "$BUILDER is up to date" ;;
foreign) log "$BUILDER is a real image (no $KEY_LABEL label); leaving it" ;;
*)
  log "creating $BUILDER from $tarball and $goroot ($goversion)"
  root="$work/builder"
  mkdir -p "$root"
  tar -C "$root" -xzf "$tarball"
  mkdir -p "$root/usr/local" "$root/go/bin" "$root/go/src"
  cp -a "$goroot" "$root/usr/local/go"
  modcache "$root/go/pkg/mod"
  # World-writable GOPATH, as in the official image, for non-root builds.
  chmod 1777 "$root/go" "$root/go/bin" "$root/go/src" "$root/go/pkg" "$root/go/pkg/mod"
  import_image "$BUILDER" "$root" "$builderkey" \
    "ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "ENV GOLANG_VERSION=${goversion#go}" \
    "ENV GOTOOLCHAIN=local" \
    "ENV GOPATH=/go" \
    "ENV GOPROXY=off" \
    "WORKDIR /go"
  rm -rf "$root"
  ;;
esac

# The runtime: what distroless static-debian12:nonroot has that a static
# binary can use, and nothing that runs.
runtimekey=$(echo "$scriptkey $rootkey" | sha)
case $(state "$RUNTIME" "$runtimekey") in
fresh) log "$RUNTIME is up to date" ;;
foreign) log "$RUNTIME is a real image (no $KEY_LABEL label); leaving it" ;;
*)
  log "creating $RUNTIME from $tarball"
  root="$work/runtime"
  mkdir -p "$root/etc" "$root/tmp" "$root/root" "$root/home/nonroot"
  tar -C "$root" -xzf "$tarball" ./etc/ssl/certs/ca-certificates.crt ./usr/share/zoneinfo
  cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$root/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
  chmod 0644 "$root/etc/passwd" "$root/etc/group"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root" "$root/home/nonroot"
  chown 65532:65532 "$root/home/nonroot"
  import_image "$RUNTIME" "$root" "$runtimekey" \
    "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    "USER 65532" \
    "WORKDIR /home/nonroot"
  rm -rf "$root"
  ;;
esac
