package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopLogsItsEnd: after SIGTERM or SIGINT the process exits 0 and its
// last log line says the stop finished and how long it took.
func TestStopLogsItsEnd(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startProcess(t)
			if code := p.Signal(t, sig, 30*time.Second); code != 0 {
				t.Fatalf("exit code %d, want 0\n%s", code, p.Output())
			}
			last := lastLogLine(t, p.Output())
			if last.Msg != "stopped" || last.Level != "info" || last.Duration == nil || *last.Duration < 0 {
				t.Fatalf("last log line %+v, want msg stopped with a duration\n%s", last, p.Output())
			}
		})
	}
}

// TestSecondSignalStopsAtOnce: a second SIGTERM or SIGINT during a drain
// of ten minutes ends the process at once, with exit code 1 (requests in
// flight may have been cut off) and a last log line saying so. The wait is
// a bound far below the drain, not a timing.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	for _, second := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(second.String(), func(t *testing.T) {
			p := startProcess(t, "PLANTSTORE_DRAIN_DELAY=10m")
			if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "readiness 503 after the first SIGTERM", func() bool {
				return getStatus(t, p.Admin+"/readyz") == http.StatusServiceUnavailable
			})
			if code := p.Signal(t, second, 30*time.Second); code != 1 {
				t.Fatalf("exit code %d, want 1\n%s", code, p.Output())
			}
			last := lastLogLine(t, p.Output())
			if last.Msg != "stopped at once on a second signal" || last.Signal != second.String() || last.Duration == nil {
				t.Fatalf("last log line %+v, want the second signal's stop\n%s", last, p.Output())
			}
		})
	}
}

type stopLogLine struct {
	Level, Msg, Signal string
	Duration           *float64 // seconds
}

func lastLogLine(t *testing.T, output string) stopLogLine {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(output), "\n")
	var last stopLogLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("last line %q is not a JSON log line: %v", lines[len(lines)-1], err)
	}
	return last
}
