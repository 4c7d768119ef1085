#!/usr/bin/env bash
# bench.sh: what followers of the change feed cost the writers. For each
# case it runs compare.sh (creates against a bare net/http floor) once with
# no follower, then with N followers of each query in turn, held open by
# feedfollowers against the server compare.sh starts; compare.sh's creates
# all carry the tag "fern". Read the ratios (store/floor) side by side.
#
# usage (from the project root):
#   COMPARE=path/to/compare.sh tools/feedfollowers/bench.sh store [followers] [query...]
# a query "-" is the unfiltered feed; default queries: - tag=fern tag=rose.
# On postgres, run it under pgcluster (go run ./tools/pgcluster -migrate -- ...).
set -euo pipefail
store=${1:?store: memory, bolt or postgres} n=${2:-100}
shift $(( $# >= 2 ? 2 : $# ))
queries=("$@")
[[ ${#queries[@]} -gt 0 ]] || queries=(- tag=fern tag=rose)
compare=${COMPARE:?set COMPARE to the path of a compare.sh}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait; rm -rf "$work"' EXIT
go build -o "$work/feedfollowers" ./tools/feedfollowers
# One token holds every follower: its cap must let them all in.
export PLANTSTORE_MAX_FOLLOWERS_PER_TOKEN=$((n + 16)) PLANTSTORE_MAX_FOLLOWERS=$((n + 256))
echo "== $store, no follower"
"$compare" "$store"
for q in "${queries[@]}"; do
  [[ $q == - ]] && q=""
  echo "== $store, $n followers, query after=now${q:+&$q}"
  "$work/feedfollowers" -n "$n" -query "$q" &
  followers=$!
  "$compare" "$store"
  kill -INT "$followers"
  wait "$followers"
done
