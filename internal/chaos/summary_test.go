package chaos

import (
	"net/http"
	"testing"
	"time"
)

// TestJudge: HAProxy's 502 for a request in flight on a killed replica is
// allowed, also for one invoked just before the kill; any other 5xx, a 503
// without Retry-After, and a failure during a rolling restart are not.
func TestJudge(t *testing.T) {
	s := time.Second
	faults := []FaultRecord{
		{Name: "kill", Start: 10 * s, End: 14 * s, KillsInFlight: true},
		{Name: "rolling-restart", Start: 20 * s, End: 30 * s, ZeroFailures: true},
	}
	for _, tc := range []struct {
		name string
		op   Op
		bad  bool
	}{
		{"502 from HAProxy during a kill", Op{Status: http.StatusBadGateway, Call: 11 * s, Return: 12 * s}, false},
		{"502 from HAProxy invoked just before a kill", Op{Status: http.StatusBadGateway, Call: 10*s - 50*time.Millisecond, Return: 10*s + 100*time.Millisecond}, false},
		{"502 from HAProxy outside a kill", Op{Status: http.StatusBadGateway, Call: 16 * s, Return: 17 * s}, true},
		{"500 from a replica during a kill", Op{Status: http.StatusInternalServerError, Replica: "r0", Call: 11 * s, Return: 12 * s}, true},
		{"503 with Retry-After", Op{Status: http.StatusServiceUnavailable, Replica: "r0", Call: 16 * s, Return: 17 * s}, false},
		{"503 without Retry-After", Op{Status: http.StatusServiceUnavailable, Replica: "r0", Err: "503 without Retry-After", Call: 16 * s, Return: 17 * s}, true},
		{"an unknown answer during a rolling restart", Op{Answer: Unknown, Err: "EOF", Call: 25 * s, Return: 26 * s}, true},
		{"a definite answer during a rolling restart", Op{Answer: OK, Status: http.StatusOK, Replica: "r1", Call: 25 * s, Return: 26 * s}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{}
			judge(c, []Op{tc.op}, faults)
			if got := len(c.Violations()) > 0; got != tc.bad {
				t.Fatalf("violations %v, want any: %v", c.Violations(), tc.bad)
			}
		})
	}
}
