#!/usr/bin/env bash
# reads.sh: the postgres store's reads (GET /plants/{id}, and a list page of
# 20) on a primary with a synchronous standby, against the same reads on
# the same pair with synchronous_standby_names = '' (a single node's
# reads: no barrier). Rounds alternate between the two, and between the
# plantstore binaries given, so that a noisy machine weighs on all alike:
# read the ratios (sync/single of each binary, in each round), not the
# absolute figures.
#
# usage (from the project root; pgcluster starts and removes the pair):
#   go run ./tools/pgcluster -migrate -standby -- tools/pgcluster/reads.sh [rounds] [connections] [seconds] [name=binary...]
# Without binaries it builds ./cmd/plantstore as "tree". The server listens
# on the fixed ports 18082 and 19092, as compare.sh's: two benchmarks at
# once would measure each other.
set -euo pipefail
rounds=${1:-3} conns=${2:-32} secs=${3:-8}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
: "${PLANTSTORE_POSTGRES_URL:?run under pgcluster -standby, or point PLANTSTORE_POSTGRES_URL and the PG* variables at a primary with a synchronous standby}"
command -v wrk >/dev/null || { echo "reads.sh: wrk is missing (apt-get install wrk)"; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait; rm -rf "$work"' EXIT
bins=("$@")
if ((${#bins[@]} == 0)); then
  go build -o "$work/plantstore" ./cmd/plantstore
  bins=("tree=$work/plantstore")
fi
export PLANTS=${PLANTS:-10000}
# The store gets as many connections as wrk has.
export PLANTSTORE_POSTGRES_MAX_CONNS=${PLANTSTORE_POSTGRES_MAX_CONNS:-$conns}

if [[ $(psql -Atc "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") != 1 ]]; then
  echo "reads.sh: the server has no synchronous standby (run under pgcluster -standby)"; exit 2
fi
psql -qc 'TRUNCATE plants' -c "INSERT INTO plants (id, name, tag) SELECT g, 'plant-' || g, 'fern' FROM generate_series(1, $PLANTS) g" -c 'VACUUM ANALYZE plants'

standby() { # '*' or '': the primary's synchronous_standby_names
  psql -qc "ALTER SYSTEM SET synchronous_standby_names = '$1'" -c 'SELECT pg_reload_conf()' >/dev/null
  for _ in $(seq 100); do [[ $(psql -Atc 'SHOW synchronous_standby_names') == "$1" ]] && return; sleep 0.1; done
  echo "reads.sh: synchronous_standby_names did not become '$1'"; exit 1
}
rps() { # list(0|1) log: requests per second; non-2xx answers fail the run
  local out
  out=$(LIST=$1 wrk -t2 -c"$conns" -d"${secs}s" -s "$here/reads.lua" http://127.0.0.1:18082/plants)
  if grep -q 'Non-2xx' <<<"$out"; then
    echo "reads.sh: round $i, $name, $mode, list=$1: $(grep 'Non-2xx' <<<"$out"); the server's log:" >&2
    tail -20 "$2" >&2
    exit 1
  fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}

echo "reads.sh: $PLANTS plants, $conns connections, ${secs}s per figure, binaries: ${bins[*]}"
printf '%-6s %-8s %10s %10s %7s %10s %10s %7s\n' round binary get_sync get_single ratio list_sync list_single ratio
for i in $(seq "$rounds"); do
  for entry in "${bins[@]}"; do
    name=${entry%%=*} bin=${entry#*=}
    PLANTSTORE_STORE=postgres PLANTSTORE_HTTP_ADDR=127.0.0.1:18082 PLANTSTORE_ADMIN_ADDR=127.0.0.1:19092 \
      PLANTSTORE_TOKENS=bench-token PLANTSTORE_DRAIN_DELAY=0s PLANTSTORE_LOG_LEVEL=warn "$bin" >"$work/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:19092/readyz && break; sleep 0.1; done
    # Odd rounds measure the synchronous standby first, even rounds last.
    if ((i % 2)); then order=(sync single); else order=(single sync); fi
    declare -A get=() list=()
    for mode in "${order[@]}"; do
      if [[ $mode == sync ]]; then standby '*'; else standby ''; fi
      get[$mode]=$(rps 0 "$work/$name.log")
      list[$mode]=$(rps 1 "$work/$name.log")
    done
    standby '*'
    kill "$pid"; wait "$pid" || true
    printf '%-6s %-8s %10.0f %10.0f %7.3f %10.0f %10.0f %7.3f\n' "$i" "$name" \
      "${get[sync]}" "${get[single]}" "$(awk -v a="${get[sync]}" -v b="${get[single]}" 'BEGIN {print a / b}')" \
      "${list[sync]}" "${list[single]}" "$(awk -v a="${list[sync]}" -v b="${list[single]}" 'BEGIN {print a / b}')"
  done
done
