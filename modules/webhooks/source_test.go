package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// A file without its endpoints list (empty, comments only, cut short after
// "endpoints:") is refused; "endpoints: []" is a file with none.
func TestParseFileTellsAMissingListFromAnEmptyOne(t *testing.T) {
	for _, text := range []string{"", "\n", "# endpoints moved\n", "endpoints:\n", "endpoints: null\n", "{}"} {
		if _, err := ParseFile([]byte(text), false); !errors.Is(err, ErrNoEndpointsList) {
			t.Errorf("ParseFile(%q) = %v, want ErrNoEndpointsList", text, err)
		}
	}
	for _, text := range []string{"endpoints: []\n", `{"endpoints":[]}`} {
		f, err := ParseFile([]byte(text), false)
		if err != nil || len(f.Endpoints) != 0 {
			t.Errorf("ParseFile(%q) = %+v, %v; want no endpoints", text, f, err)
		}
	}
}

// An empty file stops the start too (exit code 2, this one line): read
// as "no endpoints", it would drop every pending event at the start.
func TestReadFileRefusesAnEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := ReadFile(path, false)
	want := "--webhooks-file " + path + `: endpoints: missing or empty; list the endpoints, or write "endpoints: []" for none`
	if err == nil || err.Error() != want {
		t.Fatalf("ReadFile(empty) = %v, want %s", err, want)
	}
}

// hooksFile is the text of a webhooks file naming the endpoints, each
// sent to url with secret.
func hooksFile(url, secret string, names ...string) string {
	var b strings.Builder
	b.WriteString("endpoints:\n")
	for _, name := range names {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    secrets: [%s]\n", name, url, secret)
	}
	return b.String()
}

func pendingOf(t *testing.T, s *testSender) map[string]int {
	t.Helper()
	stats, err := s.box.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for ep, st := range stats {
		out[ep] = st.Pending
	}
	return out
}

// The file rewritten in place (truncated, then written) passes through an
// empty file: that moment is refused and keeps the endpoints, their
// pending events and the creates' events; only a valid file that leaves
// an endpoint out removes it.
func TestARewriteInPlaceLosesNoEvent(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	r.SetAnswer(func(webhookstest.Request, int) (int, http.Header) {
		return http.StatusServiceUnavailable, http.Header{"Retry-After": {"3600"}} // pending for an hour
	})
	path := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(path, []byte(hooksFile(r.URL, secret, "one", "two")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	file, digest, err := ReadFile(path, cfg.AllowHTTP)
	if err != nil {
		t.Fatal(err)
	}
	s := startSender(t, cfg, file.Endpoints...)
	src := NewSource(path, cfg.AllowHTTP, digest, s.d, s.metrics, zap.NewNop())
	if err := src.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Stop(context.Background()) })
	refused := func() float64 { return testutil.ToFloat64(s.metrics.reloads.WithLabelValues("refused")) }
	applied := func() float64 { return testutil.ToFloat64(s.metrics.reloads.WithLabelValues("applied")) }
	dropped := func(ep string) float64 { return testutil.ToFloat64(s.metrics.dropped.WithLabelValues(ep)) }

	s.create(t, plant.Plant{ID: 1, Name: "a"})
	s.create(t, plant.Plant{ID: 2, Name: "b"})
	waitFor(t, r, "the first attempt of every event", func(reqs []webhookstest.Request) bool { return len(reqs) == 4 })

	// Truncated and left empty long enough to be read.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the empty file refused", func() bool { return refused() == 1 })
	if got := s.d.Subscribed(); len(got) != 2 {
		t.Fatalf("endpoints after the empty file: %v, want one and two", got)
	}
	s.create(t, plant.Plant{ID: 3, Name: "c"}) // in the window
	if got := pendingOf(t, s); got["one"] != 3 || got["two"] != 3 {
		t.Fatalf("pending after the empty file and a create: %v, want 3 each", got)
	}
	// The write completes the rewrite (the same endpoints, one now listing
	// its events): applied, nothing dropped.
	if _, err := f.WriteString(hooksFile(r.URL, secret, "one", "two") + "    events: [plant.created]\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the rewritten file applied", func() bool { return applied() == 1 })
	// Rewritten in place at once, as "cat new > file" does: read whole.
	if err := os.WriteFile(path, []byte(hooksFile(r.URL, secret, "one", "two")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the second rewrite applied", func() bool { return applied() == 2 })
	// An empty write: refused again. (A rewrite above that a loaded
	// machine paused between its truncate and its write past the watch's
	// quiet period was refused too, harmlessly: count from here.)
	before := refused()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the emptied file refused", func() bool { return refused() > before })
	s.create(t, plant.Plant{ID: 4, Name: "d"})
	if got := pendingOf(t, s); got["one"] != 4 || got["two"] != 4 || dropped("one") != 0 || dropped("two") != 0 {
		t.Fatalf("pending %v, dropped one %v two %v; want 4 each and nothing dropped", got, dropped("one"), dropped("two"))
	}

	// A valid file without "two" removes it, and only it.
	if err := os.WriteFile(path, []byte(hooksFile(r.URL, secret, "one")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the file without two applied", func() bool { return applied() == 3 })
	if got := pendingOf(t, s); got["one"] != 4 || got["two"] != 0 || dropped("two") != 4 || dropped("one") != 0 {
		t.Fatalf("after removing two: pending %v, dropped one %v two %v; want one's 4 kept and two's 4 dropped", got, dropped("one"), dropped("two"))
	}
	if got := s.d.Subscribed(); len(got) != 1 || got[0] != "one" {
		t.Fatalf("endpoints %v, want one", got)
	}
	// "endpoints: []" removes every endpoint.
	if err := os.WriteFile(path, []byte("endpoints: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the file with no endpoints applied", func() bool { return applied() == 4 })
	if got := pendingOf(t, s); got["one"] != 0 || dropped("one") != 4 || len(s.d.Subscribed()) != 0 {
		t.Fatalf("after endpoints: []: pending %v, dropped one %v, endpoints %v", got, dropped("one"), s.d.Subscribed())
	}
}
