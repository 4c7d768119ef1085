package compose

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// need finds a program or ends the test: a loud skip on a laptop, a failure
// under CI=true (.ci/run installs haproxy and docker-compose).
func need(t *testing.T, program string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed", program)
		}
		t.Skipf("SKIPPED, NOT TESTED: %s is not installed: %v", program, err)
	}
	return p
}

type service struct {
	Build *struct {
		Context    string
		Dockerfile string
	}
	Image           string
	ReadOnly        bool `json:"read_only"`
	Environment     map[string]string
	DependsOn       map[string]struct{ Condition string } `json:"depends_on"`
	Ports           []string
	Volumes         []string
	StopGracePeriod string `json:"stop_grace_period"`
}

// TestComposeFile: docker-compose accepts the file, and what it resolves
// is three replicas built from the project's Dockerfile on the postgres
// store, started once the database is healthy, behind a load balancer that
// alone publishes ports, on localhost.
func TestComposeFile(t *testing.T) {
	bin := need(t, "docker-compose")
	cmd := exec.Command(bin, "-f", "docker-compose.yaml", "config")
	cmd.Env = append(os.Environ(), "PLANTSTORE_TOKENS=", "PLANTSTORE_LB_PORT=", "PLANTSTORE_STATS_PORT=", "PLANTSTORE_VERSION=", "PLANTSTORE_REVISION=") // the defaults apply
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, stderr(err))
	}
	var cfg struct{ Services map[string]service }
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("docker-compose config output: %v\n%s", err, out)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var replicas []string
	for name, s := range cfg.Services {
		if !strings.HasPrefix(name, "plantstore-") {
			continue
		}
		replicas = append(replicas, name)
		if s.Build == nil || s.Build.Context != root || s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: build %+v, want the project's Dockerfile in %s", name, s.Build, root)
		}
		if s.Environment["PLANTSTORE_STORE"] != "postgres" || !strings.Contains(s.Environment["PLANTSTORE_POSTGRES_URL"], "@postgres:5432/") {
			t.Errorf("%s: environment %v, want the postgres store on the postgres service", name, s.Environment)
		}
		if s.Environment["PLANTSTORE_TOKENS"] == "" {
			t.Errorf("%s: no token; the service refuses to start without one", name)
		}
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s: depends_on %v, want postgres healthy first", name, s.DependsOn)
		}
		if !s.ReadOnly || len(s.Ports) > 0 {
			t.Errorf("%s: read_only %v, ports %v; want a read-only root and no published port", name, s.ReadOnly, s.Ports)
		}
		if s.StopGracePeriod != "30s" {
			t.Errorf("%s: stop_grace_period %q, want 30s (drain 5 s + shutdown 20 s)", name, s.StopGracePeriod)
		}
	}
	slices.Sort(replicas)
	if want := []string{"plantstore-1", "plantstore-2", "plantstore-3"}; !slices.Equal(replicas, want) {
		t.Fatalf("replicas %v, want %v", replicas, want)
	}
	lb := cfg.Services["lb"]
	for _, p := range lb.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("lb publishes %q beyond localhost", p)
		}
	}
	if !slices.ContainsFunc(lb.Ports, func(p string) bool { return strings.HasPrefix(p, "127.0.0.1:8080:8080") }) {
		t.Errorf("lb ports %v, want the API on 127.0.0.1:8080", lb.Ports)
	}
	if !slices.ContainsFunc(lb.Volumes, func(v string) bool { return strings.HasSuffix(v, "haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro") }) {
		t.Errorf("lb volumes %v, want haproxy.cfg mounted read-only", lb.Volumes)
	}
	if len(cfg.Services["postgres"].Ports) > 0 {
		t.Errorf("postgres publishes %v", cfg.Services["postgres"].Ports)
	}
}

// TestHAProxyConfig: haproxy accepts its configuration, and routes to each
// replica of the compose file, health-checked on /readyz of the admin port.
func TestHAProxyConfig(t *testing.T) {
	bin := need(t, "haproxy")
	if out, err := exec.Command(bin, "-c", "-f", "haproxy.cfg").CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cfg, err := os.ReadFile("haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^\toption httpchk GET /readyz$`,
		`(?m)^\tdefault-server .*\bcheck port 9090\b`,
		`(?m)^\tserver plantstore-1 plantstore-1:8080$`,
		`(?m)^\tserver plantstore-2 plantstore-2:8080$`,
		`(?m)^\tserver plantstore-3 plantstore-3:8080$`,
	} {
		if !regexp.MustCompile(want).Match(cfg) {
			t.Errorf("haproxy.cfg has no line matching %s", want)
		}
	}
}

func stderr(err error) []byte {
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.Stderr
	}
	return nil
}
