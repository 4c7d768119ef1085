package gcfloor

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		want        int
	}{
		{live: 1 * mb, floor: 32 * mb, want: 800},  // the runtime's minimum heap, scaled, reaches the floor
		{live: 8 * mb, floor: 32 * mb, want: 300},  // 8 MB live + 300% = 32 MB
		{live: 12 * mb, floor: 32 * mb, want: 166}, // rounded down: a little under the floor
		{live: 16 * mb, floor: 32 * mb, want: 100}, // half the floor: GOGC as it was
		{live: 500 * mb, floor: 32 * mb, want: 100},
		{live: 0, floor: 32 * mb, want: 100}, // nothing measured yet
	} {
		if got := percent(tc.live, tc.floor); got != tc.want {
			t.Errorf("percent(%d MB live, %d MB floor) = %d, want %d", tc.live/mb, tc.floor/mb, got, tc.want)
		}
	}
}

// After a collection with a small live heap, the runtime's own heap goal
// is at the floor; after stop, GOGC is 100 again.
func TestStartRaisesTheHeapGoalToTheFloor(t *testing.T) {
	unsetGOGC(t)
	const floor = 64 << 20
	stop := Start(floor)
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	// The finalizer that tunes runs after a collection, on the runtime's
	// own goroutine (outside any synctest bubble), and the goal it set
	// applies from the next collection: each call collects, and reads the
	// goal the collection 10 ms before let the finalizer set.
	poll.Wait(t, 10*time.Millisecond, 10*time.Second, "the heap goal at about the floor", func() (bool, error) {
		runtime.GC()
		metrics.Read(goal)
		g := goal[0].Value.Uint64()
		return g >= floor*9/10, fmt.Errorf("heap goal %d MB, want about the floor of %d MB", g>>20, floor>>20)
	})
	stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GOGC after stop = %d, want 100", p)
	}
}

func TestStartLeavesAnExplicitGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop := Start(1 << 30)
	defer stop()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GOGC = %d with GOGC=100 in the environment, want it left alone", p)
	}
}

// unsetGOGC removes GOGC from the environment for the test.
func unsetGOGC(t *testing.T) {
	t.Helper()
	t.Setenv("GOGC", "") // registers the restore
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
}
