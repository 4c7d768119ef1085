package webhooks

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/plantstore/plantstore/internal/repo"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// requireProgram returns the path of a program the test needs. Missing,
// it skips with a loud reason on a laptop and fails under CI=true, where
// every program the tests need is installed.
func requireProgram(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s is not installed (%s)", name, install)
	if os.Getenv("CI") == "true" {
		t.Fatal("CI: " + msg)
	}
	t.Skip("SKIPPED, NOT TESTED: " + msg)
	return ""
}

// docBlock is the fenced block of lang in docs/webhooks.md that follows
// the marker <!-- doc-test: name ... -->: the test runs what the reader
// copies.
func docBlock(t *testing.T, name, lang string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- doc-test: " + regexp.QuoteMeta(name) + "[ \\-][^\\n]*\\n```" + lang + "\\n(.*?\\n)```")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/webhooks.md has no <!-- doc-test: %s --> marker before a ```%s block", name, lang)
	}
	return string(m[1])
}

// pythonReceiver runs docs/webhooks.md's Python receiver, as it stands,
// on a free loopback port with the secret in a file, and returns its URL
// and the lines it prints for the requests it verified.
func pythonReceiver(t *testing.T, python, secret string) (url string, verified <-chan string) {
	t.Helper()
	dir := t.TempDir()
	script, secretFile := filepath.Join(dir, "verify.py"), filepath.Join(dir, "secret")
	if err := os.WriteFile(script, []byte(docBlock(t, "verify-python", "python")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, script, "127.0.0.1", "0")
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET_FILE="+secretFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("the Python receiver's stderr:\n%s", stderr.String())
	})
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("the Python receiver printed nothing: %v", lines.Err())
	}
	addr, ok := strings.CutPrefix(lines.Text(), "listening on ")
	if !ok {
		t.Fatalf("the Python receiver's first line %q, want listening on HOST:PORT", lines.Text())
	}
	out := make(chan string, 100)
	go func() {
		defer close(out)
		for lines.Scan() {
			out <- lines.Text()
		}
	}()
	return "http://" + addr + "/hooks", out
}

// TestThePythonRecipeVerifiesRealDeliveries: docs/webhooks.md's Python
// receiver, run as it stands, accepts the deliveries of a real dispatcher
// over a bolt store (a create, an update and a delete in envelopes, each
// signed by two secrets of which it knows the second), refuses a
// signature by another secret and a timestamp past the tolerance with a
// 401, and its verify accepts the specification's published test vector.
func TestThePythonRecipeVerifiesRealDeliveries(t *testing.T) {
	python := requireProgram(t, "python3", "apt-get install python3")
	known, rotated := webhookstest.NewSecret(), webhookstest.NewSecret()
	url, verified := pythonReceiver(t, python, known)

	ep := endpoint(t, "crm", url, rotated, known)
	ep.Format = FormatEnvelope
	s := startSender(t, testConfig(), ep)
	tag := "tropical ☘"
	p := plant.Plant{ID: 7, Name: "Fílodendro \"quoted\" <&>", Tag: &tag}
	s.create(t, p)
	waitMetric(t, "the create delivered", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeDelivered, "2xx")) == 1
	})
	p.Name = "Monstera"
	if err := s.store.Replace(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the update delivered", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeDelivered, "2xx")) == 2
	})
	if err := s.store.Delete(ctx, 7); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, "the delete delivered", func() bool {
		return testutil.ToFloat64(s.metrics.attempts.WithLabelValues("crm", outcomeDelivered, "2xx")) == 3
	})
	if n := testutil.CollectAndCount(s.metrics.attempts); n != 1 {
		t.Errorf("%d attempt series, want only crm's delivered ones", n)
	}
	envelope := regexp.MustCompile(`^msg_[a-z2-7]{26} \{"type":"([a-z.]+)","timestamp":"[0-9T:.-]+Z","data":\{"id":7,"version":\d+(.*)\}\}$`)
	want := []string{
		`plant.created ,"plant":{"id":7,"name":"Fílodendro \"quoted\" <&>","tag":"tropical ☘"}`,
		`plant.updated ,"plant":{"id":7,"name":"Monstera","tag":"tropical ☘"}`,
		`plant.deleted `,
	}
	for i := range want {
		var line string
		select {
		case line = <-verified:
		case <-time.After(20 * time.Second):
			t.Fatalf("the Python receiver printed %d of the 3 deliveries", i)
		}
		m := envelope.FindStringSubmatch(line)
		if m == nil || m[1]+" "+m[2] != want[i] {
			t.Errorf("the Python receiver printed %q, want the envelope of %s", line, want[i])
		}
	}

	// The same sender's attempts, one at a time: a stranger's signature
	// and a stale or early timestamp are a 401 each; so much is verified.
	po := newPoster(testConfig(), tracenoop.NewTracerProvider())
	dl := outbox.Delivery{ID: "msg_recipe", Kind: changes.Created, Version: 1, Body: []byte(`{"id":1,"name":"fern"}`),
		CreatedAt: time.Now(), Attempt: 1}
	for _, c := range []struct {
		name    string
		secrets []string
		skew    time.Duration
		status  int
	}{
		{"the receiver's own secret", []string{known}, 0, http.StatusNoContent},
		{"another secret", []string{rotated}, 0, http.StatusUnauthorized},
		{"a timestamp 6 minutes old", []string{known}, -6 * time.Minute, http.StatusUnauthorized},
		{"a timestamp 6 minutes ahead", []string{known}, 6 * time.Minute, http.StatusUnauthorized},
		{"a timestamp 4 minutes old", []string{known}, -4 * time.Minute, http.StatusNoContent},
	} {
		po.now = func() time.Time { return time.Now().Add(c.skew) }
		if r := po.attempt(context.Background(), endpoint(t, "crm", url, c.secrets...), dl); r.status != c.status {
			t.Errorf("%s: the Python receiver answered %d (%s), want %d", c.name, r.status, r.reason, c.status)
		}
	}
	for _, want := range []string{`msg_recipe {"id":1,"name":"fern"}`, `msg_recipe {"id":1,"name":"fern"}`} {
		select {
		case line := <-verified:
			if line != want {
				t.Errorf("the Python receiver printed %q, want %q", line, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the Python receiver did not print the verified attempts")
		}
	}

	// The specification's test vector, through the recipe's verify.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "verify.py"), []byte(docBlock(t, "verify-python", "python")), 0o600); err != nil {
		t.Fatal(err)
	}
	check := exec.Command(python, "-c", `import sys; sys.path.insert(0, sys.argv[1]); from verify import verify
verify("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330",
       "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", b'{"test": 2432232314}', now=1614265330)
print("verified")`, dir)
	out, err := check.CombinedOutput()
	if err != nil || string(out) != "verified\n" {
		t.Errorf("the recipe's verify on the specification's test vector: %v\n%s", err, out)
	}
}
