package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is the checker's finding on a history.
type Verdict struct {
	// Result is Ok when every id's history is linearizable, Illegal when
	// one is not, and Unknown when none is illegal but some could not be
	// decided within their time (Undecided names them).
	Result     porcupine.CheckResult
	Operations int // Porcupine operations (list pages split per id)
	Partitions int // ids checked, one Porcupine search each
	Largest    int // operations of the largest partition
	Illegal    []IDHistory
	Undecided  []IDHistory // timed out (or not reached before the total limit)
	Took       time.Duration
	HTML       []string // a visualisation per illegal id (the first few)
}

// IDHistory is one id's history as the checker saw it.
type IDHistory struct {
	ID         int64
	Operations int
	Pending    int // operations with an unknown outcome (their return at infinity)
}

func (p IDHistory) String() string {
	return fmt.Sprintf("id %d (%d operations, %d unknown)", p.ID, p.Operations, p.Pending)
}

// CheckLimits bound the checker's time and, with it, its memory: the
// search's memory grows with the time it runs, and one partition is
// searched per worker at a time.
type CheckLimits struct {
	PerPartition time.Duration // one id's search; past it the id is undecided
	Total        time.Duration // ids not started by then are undecided
	Workers      int           // partitions searched at once; 0 is GOMAXPROCS
}

// DefaultCheckLimits are the run's limits: a partition of a few hundred
// operations is decided in milliseconds; one that takes 20 s is one whose
// unknown outcomes make the search explode, and more time rarely ends it.
var DefaultCheckLimits = CheckLimits{PerPartition: 20 * time.Second, Total: 5 * time.Minute}

// visualised is how many illegal ids get a visualisation.
const visualised = 3

// Check checks the history against Model, one Porcupine search per id
// (operations on different ids never constrain each other), each within
// lim.PerPartition. An id that is not linearizable gets Porcupine's HTML
// visualisation in dir (the first few), with the faults as annotations.
func Check(ops []Op, win IDWindow, faults []FaultRecord, lim CheckLimits, dir string) (Verdict, error) {
	start := time.Now()
	history := operations(ops, win)
	parts := Model.Partition(history)
	v := Verdict{Operations: len(history), Partitions: len(parts)}
	single := Model
	single.Partition = nil // one id already

	workers := lim.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	results := make([]porcupine.CheckResult, len(parts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if lim.Total > 0 && time.Since(start) > lim.Total {
					results[i] = porcupine.Unknown
					continue
				}
				results[i] = porcupine.CheckOperationsTimeout(single, parts[i], lim.PerPartition)
			}
		})
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()

	for i, part := range parts {
		p := IDHistory{ID: part[0].Input.(input).id, Operations: len(part)}
		for _, op := range part {
			if op.Return == unknownReturn {
				p.Pending++
			}
		}
		v.Largest = max(v.Largest, len(part))
		switch results[i] {
		case porcupine.Illegal:
			v.Illegal = append(v.Illegal, p)
		case porcupine.Unknown:
			v.Undecided = append(v.Undecided, p)
		}
	}
	switch {
	case len(v.Illegal) > 0:
		v.Result = porcupine.Illegal
	case len(v.Undecided) > 0:
		v.Result = porcupine.Unknown
	default:
		v.Result = porcupine.Ok
	}
	// The visualisation needs the verbose search, run again for the first
	// few illegal ids only.
	for i, part := range parts {
		if results[i] != porcupine.Illegal || len(v.HTML) >= visualised {
			continue
		}
		_, info := porcupine.CheckOperationsVerbose(single, part, lim.PerPartition)
		info.AddAnnotations(annotations(faults))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return v, err
		}
		path := filepath.Join(dir, "linearizability-"+strconv.FormatInt(part[0].Input.(input).id, 10)+".html")
		if err := porcupine.VisualizePath(single, info, path); err != nil {
			return v, fmt.Errorf("write the visualisation: %w", err)
		}
		v.HTML = append(v.HTML, path)
	}
	slices.SortFunc(v.Undecided, func(a, b IDHistory) int { return b.Operations - a.Operations })
	v.Took = time.Since(start)
	return v, nil
}

// annotations shows each fault as a bar on the visualisation's timeline.
func annotations(faults []FaultRecord) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(faults))
	for _, f := range faults {
		out = append(out, porcupine.Annotation{
			Tag:             "nemesis",
			Start:           int64(f.Start),
			End:             int64(f.End),
			Description:     f.Name,
			Details:         f.Detail,
			BackgroundColor: "#ffd0d0",
		})
	}
	return out
}
