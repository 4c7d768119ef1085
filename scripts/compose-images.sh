#!/usr/bin/env bash
# Creates local stand-ins for the two images deploy/compose names besides
# plantstore's, on a Docker engine that cannot pull (the CI machine), so
# that `docker-compose up --build` runs unchanged:
#
#   postgres:15-bookworm
#       a Debian bookworm root (debootstrap --variant=minbase) with Debian's
#       postgresql-15, and an entrypoint that does what the official image's
#       does with POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB on an
#       empty data directory (initdb, password authentication from any
#       host, the database), then runs the server as user postgres.
#   haproxy:2.6-bookworm
#       the same root's Debian haproxy (2.6), run as the official image runs
#       it: as user haproxy, in the foreground, on
#       /usr/local/etc/haproxy/haproxy.cfg.
#
# Each carries a label with a key over this script and the Debian root, so
# a re-run recreates only what is stale; an image under either name without
# that label is a real one (pulled on a connected machine) and is left
# alone. FORCE=1 recreates both. The root is cached as a tarball in
# $PLANTSTORE_CI_CACHE (default ~/.cache/plantstore-ci). Needs root
# (debootstrap).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly POSTGRES=postgres:15-bookworm
readonly HAPROXY=haproxy:2.6-bookworm
readonly SUITE=bookworm
readonly MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
readonly INCLUDE=ca-certificates,tzdata,postgresql-15,haproxy
readonly KEY_LABEL=org.plantstore.ci-stand-in.key
readonly CACHE=${PLANTSTORE_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plantstore-ci}

log() { printf 'compose-images: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
sha() { sha256sum | cut -c1-64; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (docker info failed)"
mkdir -p "$CACHE"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  dir="$work/debootstrap"
  log "debootstrap $SUITE ($arch, minbase, +$INCLUDE) from $MIRROR"
  if ! debootstrap --variant=minbase --arch="$arch" --include="$INCLUDE" "$SUITE" "$dir" "$MIRROR" \
    >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" "$dir/debootstrap/debootstrap.log" >&2 || true
    die "debootstrap failed"
  fi
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb
  tar -C "$dir" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
    -czf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$dir"
  echo "$tarball"
}

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
key=$(cat <(sha <"$tarball") "${BASH_SOURCE[0]}" | sha)

case $(state "$POSTGRES" "$key") in
fresh) log "$POSTGRES is up to date" ;;
foreign) log "$POSTGRES is a real image (no $KEY_LABEL label); leaving it" ;;
*)
  root="$work/postgres"
  mkdir -p "$root"
  tar -C "$root" -xzf "$tarball"
  cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# The official image's entrypoint, in what deploy/compose uses of it.
set -eu
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is required" >&2; exit 1; }
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA"
EOF
  chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"
  import_image "$POSTGRES" "$root" "$key" \
    "ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "ENV PGDATA=/var/lib/postgresql/data" \
    "EXPOSE 5432" \
    "VOLUME /var/lib/postgresql/data" \
    'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]'
  rm -rf "$root"
  ;;
esac

case $(state "$HAPROXY" "$key") in
fresh) log "$HAPROXY is up to date" ;;
foreign) log "$HAPROXY is a real image (no $KEY_LABEL label); leaving it" ;;
*)
  root="$work/haproxy"
  mkdir -p "$root"
  tar -C "$root" -xzf "$tarball"
  mkdir -p "$root/usr/local/etc/haproxy" "$root/var/lib/haproxy"
  import_image "$HAPROXY" "$root" "$key" \
    "USER haproxy" \
    'ENTRYPOINT ["/usr/sbin/haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]'
  rm -rf "$root"
  ;;
esac
