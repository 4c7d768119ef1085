#!/usr/bin/env bash
# cost.sh: where a create's time goes on the postgres store, per create,
# beside pgbench's insert.sql and create.sql on the same server: rows per
# second, rows per transaction (how many creates shared a statement and a
# commit), WAL records and WAL flushes, and the CPU time spent by the
# server's processes, by plantstore and by the load generator (pgbench or
# wrk), each divided by the rows written. On a machine where the three
# share the cores, CPU per create is what decides the rate; the CPU each
# side got per second says how much of the machine it was given.
#
# usage (from the project root; pgcluster starts and removes the server):
#   go run ./tools/pgcluster -migrate -- tools/pgcluster/cost.sh [connections] [seconds]
# plantstore listens on compare.sh's fixed ports (18082, 19092): run one of
# cost.sh, bench.sh and compare.sh at a time.
set -euo pipefail
conns=${1:-32} secs=${2:-8}
here=$(cd "$(dirname "$0")" && pwd)
: "${PLANTSTORE_POSTGRES_URL:?run under pgcluster, or point PLANTSTORE_POSTGRES_URL and the PG* variables at a server}"
command -v wrk >/dev/null || { echo "cost.sh: wrk is missing (apt-get install wrk)"; exit 2; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait; rm -rf "$work"' EXIT
go build -o "$work/plantstore" ./cmd/plantstore
cat >"$work/post.lua" <<'LUA'
-- every request creates a plant of an id no other request uses
local threads = {}
function setup(thread) thread:set("tid", #threads + 1); table.insert(threads, thread) end
function init(args) counter = 0; base = (tid or 1) * 1000000000000000 + (os.time() % 100000) * 1000000000 end
function request()
  counter = counter + 1
  local id = base + counter
  return wrk.format("POST", "/plants", {["Content-Type"] = "application/json", ["Authorization"] = "Bearer bench-token"},
    string.format('{"id":%d,"name":"plant-%d","tag":"fern"}', id, id))
end
LUA

# CPU ticks (1/100 s) of the server: the postmaster with the children it
# reaped (pgbench's backends end with their connections), and its children
# alive.
server_ticks() {
  local pm; pm=$(head -1 "$(psql -Atc 'SHOW data_directory')/postmaster.pid")
  { awk '{print $14+$15+$16+$17}' "/proc/$pm/stat"
    for p in $(pgrep -P "$pm"); do awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || true; done; } | awk '{s+=$1} END {print s}'
}
counters() {
  psql -Atc "SELECT wal_records, wal_sync, (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()), (SELECT count(*) FROM plant_changes) FROM pg_stat_wal" | tr '|' ' '
}
printf '%-11s %8s %10s %8s %9s %11s %11s %11s %9s\n' what rows/s rows/xact wal_rec wal_sync server_us store_us client_us cores_got
# line NAME SECONDS BEFORE AFTER SERVER_TICKS STORE_TICKS CLIENT_SECONDS
line() {
  read -r r0 s0 x0 n0 <<<"$3"; read -r r1 s1 x1 n1 <<<"$4"
  awk -v name="$1" -v t="$2" -v n=$((n1 - n0)) -v r=$((r1 - r0)) -v s=$((s1 - s0)) -v x=$((x1 - x0)) -v sv="$5" -v st="$6" -v cl="$7" 'BEGIN {
    store = (st == "-") ? "-" : sprintf("%.1f", st * 1e4 / n)
    printf "%-11s %8.0f %10.2f %8.2f %9.4f %11.1f %11s %11.1f %9.2f\n", name, n / t, n / x, r / n, s / n, sv * 1e4 / n, store, cl * 1e6 / n, (sv / 100 + (st == "-" ? 0 : st / 100) + cl) / t }'
}
timed() { /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >"$work/out" 2>&1; }
for script in insert.sql create.sql; do
  psql -qc 'TRUNCATE plants, plant_heads, plant_changes'
  a=$(counters) c0=$(server_ticks)
  # The change log counts the rows of create.sql; insert.sql's are counted from plants.
  timed pgbench -n -c "$conns" -j 2 -T "$secs" -M prepared -f "$here/$script"
  b=$(counters) c1=$(server_ticks)
  if [[ $script == insert.sql ]]; then
    n=$(psql -Atc 'SELECT count(*) FROM plants'); a="${a% *} 0" b="${b% *} $n"
  fi
  read -r elapsed user sys <"$work/time"
  line "${script%.sql}" "$elapsed" "$a" "$b" $((c1 - c0)) - "$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')"
done
psql -qc 'TRUNCATE plants, plant_heads, plant_changes'
if ss -ltn | awk '{print $4}' | grep -qE ':(18082|19092)$'; then
  echo "cost.sh: ports 18082, 19092 are busy: another compare.sh or cost.sh is running"; exit 1
fi
PLANTSTORE_POSTGRES_MAX_CONNS=$conns PLANTSTORE_HTTP_ADDR=127.0.0.1:18082 PLANTSTORE_ADMIN_ADDR=127.0.0.1:19092 \
PLANTSTORE_STORE=postgres PLANTSTORE_TOKENS=bench-token PLANTSTORE_DRAIN_DELAY=0s "$work/plantstore" >"$work/plantstore.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -s -o /dev/null 127.0.0.1:18082 && break; sleep 0.1; done
wrk -t2 -c"$conns" -d2s -s "$work/post.lua" http://127.0.0.1:18082/plants >/dev/null # warm up
a=$(counters) c0=$(server_ticks) p0=$(awk '{print $14+$15}' "/proc/$pid/stat")
timed wrk -t2 -c"$conns" -d"${secs}s" -s "$work/post.lua" http://127.0.0.1:18082/plants
b=$(counters) c1=$(server_ticks) p1=$(awk '{print $14+$15}' "/proc/$pid/stat")
read -r elapsed user sys <"$work/time"
line plantstore "$elapsed" "$a" "$b" $((c1 - c0)) $((p1 - p0)) "$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')"
if grep -q Non-2xx "$work/out"; then grep Non-2xx "$work/out"; fi
