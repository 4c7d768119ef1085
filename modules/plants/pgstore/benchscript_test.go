package pgstore

import (
	"os"
	"strings"
	"testing"
)

// The pgbench scripts of tools/pgcluster stand for the database doing a
// create's own work: each must send the store's create statement, with
// literal plants in place of its parameters, or the benchmark's "vs_same"
// ratio compares with something else.
func TestBenchScriptsSendTheCreateStatement(t *testing.T) {
	for file, rows := range map[string]string{
		"create.sql":       `unnest(ARRAY[:id]::bigint[], '{plant}'::text[], '{fern}'::text[])`,
		"create_batch.sql": `unnest(ARRAY(SELECT :id::bigint * 1000 + g FROM generate_series(1, :n::int) g), array_fill('plant'::text, ARRAY[:n::int]), array_fill('fern'::text, ARRAY[:n::int]))`,
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
		want := strings.Replace(batchSQL, `unnest($1::bigint[], $2::text[], $3::text[])`, rows, 1)
		if got != want {
			t.Errorf("%s sends\n%s\nwant the store's create statement\n%s", file, got, want)
		}
	}
}
