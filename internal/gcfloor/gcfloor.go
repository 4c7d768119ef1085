// Package gcfloor keeps the garbage collector from running on a tiny heap.
//
// Go starts a collection when the heap has grown by GOGC percent (100) over
// what the last one left live, but never below 4 MB. A service whose data
// lives outside the heap (the bolt store keeps plants in its mmap'ed file,
// postgres in the database) keeps a live heap of a megabyte or two while
// every request allocates: under load the collector then runs dozens of
// times a second, each time stopping the world twice and taking a P for
// its marking. Measured on the bolt store at 32 connections: 75
// collections a second, a fifth of the server's CPU per create.
//
// A floor fixes that at a bounded cost: after each collection GOGC is set
// so that the next one starts no sooner than at the floor's heap size, and
// once the live heap is half the floor or more, GOGC is back at 100 and
// nothing changes. The memory a process may then hold beyond what the
// default would let it is at most the floor. GOMEMLIMIT (set from the
// container's limit in main) still wins over it when memory is short.
//
// The GC tuners published as libraries (bytedance/gopkg's gctuner, for one)
// drive GOGC towards a threshold from both sides, below 100 too, which is
// not wanted here; this is the few lines the floor alone needs.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// DefaultFloor is the heap size below which no collection starts.
const DefaultFloor = 32 << 20

// runtimeMinimum is the heap size below which the runtime starts no
// collection at GOGC=100. It scales with GOGC (runtime.heapMinimum), so a
// GOGC above floor/runtimeMinimum*100 would put the next collection past
// the floor: percent stays at or under that.
const runtimeMinimum = 4 << 20

// defaultPercent is GOGC's default, which the floor starts from: Start
// does nothing when GOGC is set.
const defaultPercent = 100

// percent is the GOGC that makes the next collection start at about floor
// bytes of heap, when live bytes survived the last one: the default once
// live is large enough, more below that.
func percent(live, floor uint64) int {
	if live == 0 || live*(100+defaultPercent) >= floor*100 {
		return defaultPercent
	}
	p := min((floor-live)*100/live, floor*100/runtimeMinimum)
	return int(p) //nolint:gosec // at most floor*100/runtimeMinimum: 800 for the default floor
}

// Start applies the floor after every collection until stop is called. It
// does nothing when GOGC is set in the environment: an operator who chose
// a value gets exactly that one.
func Start(floor uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	t := &tuner{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.arm()
	return func() {
		t.stopped.Store(true)
		debug.SetGCPercent(defaultPercent)
	}
}

type tuner struct {
	floor   uint64
	sample  []metrics.Sample // owned by the finalizer goroutine
	percent int
	stopped atomic.Bool
}

// sentinel is an object that lives only until the next collection, so its
// finalizer runs once after each one. It is larger than the tiny
// allocator's 16 bytes: a tiny object's finalizer may never run.
type sentinel struct{ _ [32]byte }

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
	})
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := percent(t.sample[0].Value.Uint64(), t.floor); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}
