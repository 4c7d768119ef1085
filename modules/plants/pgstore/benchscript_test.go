package pgstore

import (
	"os"
	"strings"
	"testing"
)

// The pgbench scripts of tools/pgcluster stand for the database doing a
// create's own work: each must send the store's create statement, with
// literal plants (and delivery rows) in place of its parameters, or the
// benchmark's "vs_same" ratio compares with something else.
func TestBenchScriptsSendTheCreateStatement(t *testing.T) {
	const onePlant = `unnest(ARRAY[:id]::bigint[], '{plant}'::text[], '{fern}'::text[])`
	withHook := changeSQL(createStatement.cte, createStatement.written, createStatement.kind, pgWriteSQL(createStatement.params+1))
	withHook = strings.NewReplacer(
		`unnest($4::bigint[], $5::text[], $6::text[], $7::bytea[], $8::text[], $9::bool[])`,
		`unnest(ARRAY[:id]::bigint[], ARRAY['msg_' || :id]::text[], '{local}'::text[], ARRAY[convert_to('{"id":' || :id || ',"name":"plant","tag":"fern"}', 'UTF8')]::bytea[], '{""}'::text[], '{t}'::bool[])`,
		`secs => $10`, `secs => 30`,
	).Replace(withHook)
	for file, want := range map[string]struct{ sql, rows string }{
		"create.sql":         {batchSQL, onePlant},
		"create_batch.sql":   {batchSQL, `unnest(ARRAY(SELECT :id::bigint * 1000 + g FROM generate_series(1, :n::int) g), array_fill('plant'::text, ARRAY[:n::int]), array_fill('fern'::text, ARRAY[:n::int]))`},
		"create_webhook.sql": {withHook, onePlant},
	} {
		script, err := os.ReadFile("../../../tools/pgcluster/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var sql []string
		for line := range strings.Lines(string(script)) {
			if !strings.HasPrefix(line, "--") && !strings.HasPrefix(line, `\set`) {
				sql = append(sql, line)
			}
		}
		got := strings.TrimSuffix(strings.TrimSpace(strings.Join(sql, "")), ";")
		if sql := strings.Replace(want.sql, `unnest($1::bigint[], $2::text[], $3::text[])`, want.rows, 1); got != sql {
			t.Errorf("%s sends\n%s\nwant the store's create statement\n%s", file, got, sql)
		}
	}
}
