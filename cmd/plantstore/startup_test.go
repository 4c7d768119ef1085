package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/repo"
)

// TestServingLineSaysWhatRuns: once the start has succeeded, one info line
// says what runs, where, on which store and what is on, and holds no
// secret (the token and the webhook secret are searched for).
func TestServingLineSaysWhatRuns(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	dir := t.TempDir()
	hooks := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(hooks, []byte("endpoints: [{name: crm, url: \"https://crm.example/in\", secrets: ["+secret+"]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	p := startProcess(t, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+data, "PLANTSTORE_WEBHOOKS_FILE="+hooks)
	if code := p.Signal(t, syscall.SIGTERM, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}
	out := p.Output()
	var serving []map[string]any
	for line := range strings.Lines(out) {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] == "serving" {
			delete(entry, "time")
			serving = append(serving, entry)
		}
	}
	want := map[string]any{
		"level": "info", "msg": "serving", "version": "dev",
		"api":   strings.TrimPrefix(p.API, "http://"),
		"admin": strings.TrimPrefix(p.Admin, "http://"),
		"store": "bolt", "data_dir": data, "tokens": 1.0,
		"jwt": "off", "webhooks": "on", "tracing": "off", "pprof": "off",
	}
	if len(serving) != 1 || !maps.Equal(serving[0], want) {
		t.Errorf("serving lines %v, want one: %v\n%s", serving, want, out)
	}
	for _, s := range []string{testToken, secret} {
		if strings.Contains(out, s) {
			t.Errorf("the output holds the secret %q", s)
		}
	}

	// The README's example has the same fields.
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	example := regexp.MustCompile("`(\\{\"msg\":\"serving\"[^`]*)`").FindSubmatch(readme)
	if example == nil {
		t.Fatal("README.md shows no serving line")
	}
	var shown map[string]any
	if err := json.Unmarshal(example[1], &shown); err != nil {
		t.Fatalf("README's serving line %s: %v", example[1], err)
	}
	shownKeys, wantKeys := slices.Sorted(maps.Keys(shown)), slices.Sorted(maps.Keys(want))
	wantKeys = slices.DeleteFunc(wantKeys, func(k string) bool { return k == "level" })
	if !slices.Equal(shownKeys, wantKeys) {
		t.Errorf("README's serving line has the fields %v, the program's %v", shownKeys, wantKeys)
	}
}
