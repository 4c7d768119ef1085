package main

import (
	"io"
	"strings"
	"testing"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
)

// The limit flags' environment twins are tested with the others
// (configFields in config_test.go).

func TestLimitFlagsDefaults(t *testing.T) {
	clearEnv(t)
	cfg, err := parseConfig([]string{"--tokens=t"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Limits != httpserver.DefaultLimits {
		t.Fatalf("limits = %+v, want the defaults %+v", cfg.HTTP.Limits, httpserver.DefaultLimits)
	}
	if cfg.Auth.RateLimit != 0 || cfg.Auth.RateBurst != 20 {
		t.Fatalf("rate limit = %v burst %d, want off (0) with burst 20", cfg.Auth.RateLimit, cfg.Auth.RateBurst)
	}
}

func TestLimitFlagsMustBePositive(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct{ arg, want string }{
		{"--read-header-timeout=0s", "--read-header-timeout 0s: must be positive"},
		{"--read-timeout=-1s", "--read-timeout -1s: must be positive"},
		{"--write-timeout=0s", "--write-timeout 0s: must be positive"},
		{"--idle-timeout=0s", "--idle-timeout 0s: must be positive"},
		{"--max-header-bytes=0", "--max-header-bytes 0: must be positive"},
		{"--max-concurrent-requests=0", "--max-concurrent-requests 0: must be positive"},
		{"--max-followers=0", "--max-followers 0: must be positive"},
		{"--max-followers-per-token=-1", "--max-followers-per-token -1: must be positive"},
		{"--max-imports=0", "--max-imports 0: must be positive"},
		{"--max-imports-per-token=0", "--max-imports-per-token 0: must be positive"},
		{"--max-connections=-1", "--max-connections -1: must not be negative (0 derives it from the file limit)"},
		{"--rate-limit=-1", "--rate-limit -1: must not be negative (0 turns it off)"},
		{"--rate-limit=NaN", "--rate-limit NaN: must not be negative (0 turns it off)"},
	} {
		_, err := parseConfig([]string{"--tokens=t", tc.arg}, io.Discard)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error = %v, want %q", tc.arg, err, tc.want)
		}
	}
	_, err := parseConfig([]string{"--tokens=t", "--rate-limit=10", "--rate-burst=0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--rate-burst 0: must be positive") {
		t.Errorf("--rate-burst=0 with a limit: error = %v", err)
	}
	if _, err := parseConfig([]string{"--tokens=t", "--rate-burst=0"}, io.Discard); err != nil {
		t.Errorf("--rate-burst=0 with the limit off: %v", err)
	}
}
