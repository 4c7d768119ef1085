package pgtest

import (
	"errors"
	"slices"
	"testing"
)

// NewCluster hands out the clusters begun early, each once, before it
// starts any; Main removes those no test took.
func TestEarlyStartsAreTakenOnceEach(t *testing.T) {
	t.Parallel()
	var e earlyStarts
	begun := []*Cluster{{dir: "a"}, {dir: "b"}, {dir: "c"}}
	next := make(chan *Cluster, len(begun))
	for _, c := range begun {
		next <- c
	}
	e.begin(len(begun), func() (*Cluster, error) { return <-next, nil })
	late := &Cluster{dir: "late"}
	errLate := errors.New("started late")
	startLate := func() (*Cluster, error) { return late, errLate }

	var taken []*Cluster
	for range 2 {
		c, err := e.take(startLate)
		if err != nil {
			t.Fatalf("take of a begun cluster = %v", err)
		}
		taken = append(taken, c)
	}
	rest := e.untaken()
	if len(rest) != 1 || slices.Contains(taken, rest[0]) || taken[0] == taken[1] {
		t.Fatalf("taken %v, untaken %v: want the three begun ones, each once", taken, rest)
	}
	if c, err := e.take(startLate); c != late || !errors.Is(err, errLate) {
		t.Fatalf("take with none begun left = %v, %v; want a cluster started then", c, err)
	}
	if rest := e.untaken(); len(rest) != 0 {
		t.Fatalf("untaken a second time = %v, want none", rest)
	}
}
