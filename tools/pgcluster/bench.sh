#!/usr/bin/env bash
# bench.sh: the postgres store's create path against pgbench running the
# same single-row INSERT at the same concurrency on the same server. Rounds
# alternate between the two so that a noisy machine weighs on both alike;
# read the ratio, not the absolute figures.
#
# usage (from the project root; pgcluster starts and removes the server):
#   go run ./tools/pgcluster -migrate -- tools/pgcluster/bench.sh [rounds] [connections] [seconds]
# COMPARE names compare.sh (default ../shared/bench/compare.sh).
set -euo pipefail
rounds=${1:-3} conns=${2:-32} secs=${3:-10}
compare=${COMPARE:-../shared/bench/compare.sh}
here=$(cd "$(dirname "$0")" && pwd)
: "${PLANTSTORE_POSTGRES_URL:?run under pgcluster, or point PLANTSTORE_POSTGRES_URL and the PG* variables at a server}"

pgbench_cmd=(pgbench -n -c "$conns" -j 2 -T "$secs" -M prepared -f "$here/insert.sql")
echo "pgbench command: ${pgbench_cmd[*]}"
printf '%-6s %12s %12s %9s\n' round pgbench_tps store_rps ratio
for i in $(seq "$rounds"); do
  psql -qc 'TRUNCATE plants'
  tps=$("${pgbench_cmd[@]}" 2>&1 | awk '/^tps/ {print $3}')
  psql -qc 'TRUNCATE plants'
  rps=$("$compare" postgres "$conns" "$secs" 1 | awk '$1 == "1" {print $4}')
  printf '%-6s %12.0f %12.0f %9.3f\n' "$i" "$tps" "$rps" "$(awk -v a="$rps" -v b="$tps" 'BEGIN {print a / b}')"
done
