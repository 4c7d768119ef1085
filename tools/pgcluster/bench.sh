#!/usr/bin/env bash
# bench.sh: the postgres store's create path against pgbench running the
# same single-row INSERT at the same concurrency on the same server. Rounds
# alternate between the two so that a noisy machine weighs on both alike;
# read the median ratio, not the absolute figures. floor_rps is compare.sh's
# bare net/http server with a map: what HTTP alone allows on this machine.
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
pgbench_cmd=(pgbench -n -c "$conns" -j 2 -T "$secs" -M prepared -f "$here/insert.sql")
echo "pgbench command: ${pgbench_cmd[*]}"
echo "compare command: PLANTSTORE_POSTGRES_MAX_CONNS=$PLANTSTORE_POSTGRES_MAX_CONNS $compare postgres $conns $secs 1"
printf '%-6s %12s %12s %9s %12s\n' round pgbench_tps store_rps ratio floor_rps
ratios=()
for i in $(seq "$rounds"); do
  psql -qc 'TRUNCATE plants'
  tps=$("${pgbench_cmd[@]}" 2>&1 | awk '/^tps/ {print $3}')
  psql -qc 'TRUNCATE plants'
  for _ in $(seq 600); do ports_free && break; sleep 1; done
  ports_free || { echo "bench.sh: ports 18081, 18082, 19092 stay busy: another compare.sh is running"; exit 1; }
  out=$("$compare" postgres "$conns" "$secs" 1 2>&1)
  if grep -qE 'warning|address already in use' <<<"$out"; then
    echo "round $i not counted: $(grep -E 'warning|address already in use' <<<"$out" | head -1)"
    continue
  fi
  read -r floor rps < <(awk '$1 == "1" {print $2, $4}' <<<"$out")
  ratio=$(awk -v a="$rps" -v b="$tps" 'BEGIN {printf "%.3f", a / b}')
  ratios+=("$ratio")
  printf '%-6s %12.0f %12.0f %9s %12.0f\n' "$i" "$tps" "$rps" "$ratio" "$floor"
done
((${#ratios[@]})) && echo "median ratio: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')"
