#!/usr/bin/env bash
# bench.sh: the postgres store's create path against pgbench at the same
# concurrency on the same server, running two scripts: insert.sql, the bare
# single-row INSERT of a plant, and create.sql, the statement one create
# sends the store (the plant, its head and its change-log row), so that
# vs_insert reads "plantstore / the database inserting a row" and vs_same
# "plantstore / the database doing a create's own work, one transaction
# each". Rounds alternate between the three so that a noisy machine weighs
# on all alike; read the median ratios, not the absolute figures.
# floor_rps is compare.sh's bare net/http server with a map: what HTTP
# alone allows on this machine.
#
# usage (from the project root; pgcluster starts and removes the server):
#   go run ./tools/pgcluster -migrate -- tools/pgcluster/bench.sh [rounds] [connections] [seconds]
# COMPARE names a compare.sh (the create path against a bare net/http
# floor; it is not part of this repository, so it must be given). compare.sh
# listens on fixed ports, so each round first waits for them to be free: two
# runs at once would measure each other's servers.
set -euo pipefail
rounds=${1:-5} conns=${2:-32} secs=${3:-10}
compare=${COMPARE:?set COMPARE to the path of a compare.sh}
here=$(cd "$(dirname "$0")" && pwd)
: "${PLANTSTORE_POSTGRES_URL:?run under pgcluster, or point PLANTSTORE_POSTGRES_URL and the PG* variables at a server}"

# The store gets as many connections as pgbench has clients.
export PLANTSTORE_POSTGRES_MAX_CONNS=${PLANTSTORE_POSTGRES_MAX_CONNS:-$conns}
ports_free() { ! ss -ltn | awk '{print $4}' | grep -qE ':(18081|18082|19092)$'; }
pgbench_cmd=(pgbench -n -c "$conns" -j 2 -T "$secs" -M prepared)
echo "pgbench commands: ${pgbench_cmd[*]} -f $here/insert.sql (insert_tps), -f $here/create.sql (same_tps)"
echo "compare command: PLANTSTORE_POSTGRES_MAX_CONNS=$PLANTSTORE_POSTGRES_MAX_CONNS $compare postgres $conns $secs 1"
printf '%-6s %11s %11s %10s %10s %8s %10s\n' round insert_tps same_tps store_rps vs_insert vs_same floor_rps
pgbench_tps() {
  psql -qc 'TRUNCATE plants, plant_heads, plant_changes'
  "${pgbench_cmd[@]}" -f "$here/$1" 2>&1 | awk '/^tps/ {print $3}'
}
ratios=() same_ratios=()
for i in $(seq "$rounds"); do
  tps=$(pgbench_tps insert.sql)
  same=$(pgbench_tps create.sql)
  psql -qc 'TRUNCATE plants, plant_heads, plant_changes'
  for _ in $(seq 600); do ports_free && break; sleep 1; done
  ports_free || { echo "bench.sh: ports 18081, 18082, 19092 stay busy: another compare.sh is running"; exit 1; }
  out=$("$compare" postgres "$conns" "$secs" 1 2>&1)
  if grep -qE 'warning|address already in use' <<<"$out"; then
    echo "round $i not counted: $(grep -E 'warning|address already in use' <<<"$out" | head -1)"
    continue
  fi
  read -r floor rps < <(awk '$1 == "1" {print $2, $4}' <<<"$out")
  ratio=$(awk -v a="$rps" -v b="$tps" 'BEGIN {printf "%.3f", a / b}')
  same_ratio=$(awk -v a="$rps" -v b="$same" 'BEGIN {printf "%.3f", a / b}')
  ratios+=("$ratio") same_ratios+=("$same_ratio")
  printf '%-6s %11.0f %11.0f %10.0f %10s %8s %10.0f\n' "$i" "$tps" "$same" "$rps" "$ratio" "$same_ratio" "$floor"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
((${#ratios[@]})) && echo "median ratios: vs_insert $(median "${ratios[@]}"), vs_same $(median "${same_ratios[@]}")"
