#!/bin/sh
# importbench.sh BINARY STORE N [IMPORT FLAGS...]: times `plantstore import`
# of N new plants from a file into a fresh server of BINARY on STORE (bolt
# or postgres), then the same import again
# (every plant unchanged), then a snapshot of the change feed
# (GET /plants/changes?snapshot=true as a stream, in pages of 1000, read to
# its snapshot-end event), and prints plants/s and wall time of each. For
# postgres run it under tools/pgcluster, which sets PLANTSTORE_POSTGRES_URL
# and the PG* variables: then the same rows are also loaded with psql's
# \copy into a bare table (no index) and into one keyed by id as plants
# is, the yardstick of what the database itself does with them.
# Example: nice -n 5 tools/importbench/importbench.sh ./plantstore bolt 1000000
set -eu
bin=$1 store=$2 n=$3
shift 3
dir=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
token=bench-token-0123456789
seq 1 "$n" | awk '{ printf "{\"id\":%.0f,\"name\":\"plant number %d\",\"tag\":\"t%d\"}\n", $1*7919-500000000, $1, $1%50 }' >"$dir/plants.ndjson"
port=${PORT:-18480}
addr=127.0.0.1:$port
PLANTSTORE_STORE=$store PLANTSTORE_DATA_DIR=$dir PLANTSTORE_HTTP_ADDR=$addr \
	PLANTSTORE_ADMIN_ADDR=127.0.0.1:$((port + 1)) PLANTSTORE_TOKENS=$token PLANTSTORE_LOG_LEVEL=warn \
	"$bin" >"$dir/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
	curl -fs "http://127.0.0.1:$((port + 1))/readyz" >/dev/null && break
	sleep 0.2
done
for run in first resumed; do
	start=$(date +%s.%N)
	PLANTSTORE_TOKEN=$token "$bin" import -o table -f "$dir/plants.ndjson" --url "http://$addr" "$@"
	end=$(date +%s.%N)
	echo "$run: $n plants in $(echo "$end - $start" | bc) s, $(echo "$n / ($end - $start)" | bc) plants/s"
done
start=$(date +%s.%N)
# The stream goes on after snapshot-end: the time is taken once sed has
# seen it (curl itself ends only at its next write, a heartbeat later).
got=$(curl -sN -H "Authorization: Bearer $token" -H 'Accept: text/event-stream' \
	"http://$addr/plants/changes?snapshot=true&limit=1000" | sed '/^event: snapshot-end/q' |
	{ grep -c '^event: plant.created' || true; date +%s.%N >"$dir/snapshot-end"; })
end=$(cat "$dir/snapshot-end")
echo "snapshot: $got plants in $(echo "$end - $start" | bc) s, $(echo "$got / ($end - $start)" | bc) plants/s"
if [ "$store" = postgres ]; then
	seq 1 "$n" | awk '{ printf "%.0f\tplant number %d\tt%d\n", $1*7919-500000000, $1, $1%50 }' >"$dir/plants.tsv"
	for table in bare keyed; do
		key=
		[ "$table" = keyed ] && key=" PRIMARY KEY"
		psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE import_$table (id bigint$key, name text NOT NULL, tag text)"
		start=$(date +%s.%N)
		psql -q -v ON_ERROR_STOP=1 -c "\\copy import_$table FROM '$dir/plants.tsv'"
		end=$(date +%s.%N)
		echo "psql copy ($table table): $n rows in $(echo "$end - $start" | bc) s, $(echo "$n / ($end - $start)" | bc) rows/s"
		psql -q -c "DROP TABLE import_$table"
	done
fi
