package main

import (
	"strings"
	"testing"
	"time"
)

// TestAnnounceSaysWhatIsMeasured: before the build and the first step, the
// run says what it measures, on which stores, how long, and what it skips.
func TestAnnounceSaysWhatIsMeasured(t *testing.T) {
	p, err := newPlan([]string{"memory", " bolt", "postgres"}, "1, 8,32", 5*time.Second, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p.announce(&out)
	want := "loadbench: skipping postgres: PLANTSTORE_POSTGRES_URL is not set\n" +
		"loadbench: creates (POST /plants, a new id each, on keep-alive connections) against a fresh plantstore " +
		"on the memory, bolt store at 1,8,32 connections, 5s each: 6 steps, about 30s of load after the build\n"
	if out.String() != want {
		t.Errorf("announce\n got %q\nwant %q", out.String(), want)
	}

	p, err = newPlan([]string{"postgres"}, "128", time.Second, func(k string) string {
		if k == "PLANTSTORE_POSTGRES_URL" {
			return "postgres://bench@127.0.0.1/bench"
		}
		return ""
	})
	if err != nil || len(p.stores) != 1 || p.steps() != 1 {
		t.Errorf("postgres with a URL: plan %+v, %v; want it measured", p, err)
	}
	if _, err := newPlan([]string{"memory"}, "8,0", time.Second, func(string) string { return "" }); err == nil || err.Error() != `bad concurrency "0"` {
		t.Errorf("concurrency 0: %v, want bad concurrency \"0\"", err)
	}
}
