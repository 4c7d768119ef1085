package httpserver

import "testing"

// The default --max-connections keeps max(128, a tenth) of the file limit
// for the rest of the process, and never goes below 16.
func TestMaxConnectionsFor(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{
		{0, 16},
		{100, 16},
		{144, 16},
		{145, 17},
		{256, 128},
		{1024, 896},
		{4096, 3687},
		{1 << 20, 943719},
		{^uint64(0), 1<<31 - 1}, // RLIM_INFINITY
	} {
		if got := maxConnectionsFor(tc.nofile); got != tc.want {
			t.Errorf("maxConnectionsFor(%d) = %d, want %d", tc.nofile, got, tc.want)
		}
	}
}

func TestZeroMaxConnectionsIsDerived(t *testing.T) {
	if got, want := withDefaults(Limits{}).MaxConnections, DefaultMaxConnections(); got != want || got < minMaxConnections {
		t.Fatalf("MaxConnections 0 became %d, want the derived %d (at least %d)", got, want, minMaxConnections)
	}
}
