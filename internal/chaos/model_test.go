package chaos

import (
	"os"
	"slices"
	"testing"
	"time"
)

// The model and the checker on small hand-made histories: what must pass,
// and what must not (a lost acknowledgement, a phantom delete, a list that
// misses a plant). Times are in nanoseconds.
func TestModel(t *testing.T) {
	p := plantFor(7, 0)
	q := plantFor(7, 1)
	create := func(pl Plant, a Answer, call, ret int) Op {
		return Op{Kind: Create, ID: pl.ID, Name: pl.Name, Tag: pl.Tag, Answer: a, Call: time.Duration(call), Return: time.Duration(ret)}
	}
	get := func(got Plant, a Answer, call, ret int) Op {
		return Op{Kind: Get, ID: 7, Got: got, Answer: a, Call: time.Duration(call), Return: time.Duration(ret)}
	}
	del := func(a Answer, call, ret int) Op {
		return Op{Kind: Delete, ID: 7, Answer: a, Call: time.Duration(call), Return: time.Duration(ret)}
	}
	r := plantFor(7, names) // a plant only an update sends
	put := func(ifMatch string, match Plant, a Answer, call, ret int) Op {
		return Op{Kind: Update, ID: 7, Name: r.Name, Tag: r.Tag, IfMatch: ifMatch, Match: match, Answer: a, Call: time.Duration(call), Return: time.Duration(ret)}
	}
	list := func(tag string, page []Plant, call, ret int) Op {
		return Op{Kind: List, Tag: tag, Limit: 10, Page: page, Answer: OK, Call: time.Duration(call), Return: time.Duration(ret)}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"create then get", []Op{create(p, OK, 0, 10), get(p, OK, 20, 30)}, true},
		{"an acknowledged create lost", []Op{create(p, OK, 0, 10), get(Plant{}, NotFound, 20, 30)}, false},
		{"concurrent creates, one wins", []Op{create(p, OK, 0, 10), create(q, Conflict, 0, 10), get(p, OK, 20, 30)}, true},
		{"both creates won", []Op{create(p, OK, 0, 10), create(q, OK, 0, 10)}, false},
		{"an identical create again", []Op{create(p, OK, 0, 10), create(p, OK, 20, 30)}, true},
		{"an unknown create that took effect later", []Op{create(p, Unknown, 0, 10), get(Plant{}, NotFound, 20, 30), get(p, OK, 40, 50)}, true},
		{"an unknown create never seen", []Op{create(p, Unknown, 0, 10), get(Plant{}, NotFound, 20, 30)}, true},
		{"a delete of an absent plant answered 204", []Op{del(OK, 0, 10)}, false},
		{"an unknown delete", []Op{create(p, OK, 0, 10), del(Unknown, 20, 30), get(Plant{}, NotFound, 40, 50)}, true},
		{"a list shows a created plant", []Op{create(p, OK, 0, 10), list(p.Tag, []Plant{p}, 20, 30)}, true},
		{"a list misses a created plant", []Op{create(p, OK, 0, 10), list(p.Tag, nil, 20, 30)}, false},
		{"a list of the other tag", []Op{create(p, OK, 0, 10), list(q.Tag, nil, 20, 30)}, true},
		{"an update then get", []Op{create(p, OK, 0, 10), put("", Plant{}, OK, 20, 30), get(r, OK, 40, 50)}, true},
		{"an acknowledged update lost", []Op{create(p, OK, 0, 10), put("", Plant{}, OK, 20, 30), get(p, OK, 40, 50)}, false},
		{"an update of an absent plant answered 200", []Op{put("", Plant{}, OK, 0, 10)}, false},
		{"an update of an absent plant answered 404", []Op{put("", Plant{}, NotFound, 0, 10), get(Plant{}, NotFound, 20, 30)}, true},
		{"an update of a present plant answered 404", []Op{create(p, OK, 0, 10), put("", Plant{}, NotFound, 20, 30)}, false},
		{"an update never creates", []Op{put("", Plant{}, Unknown, 0, 10), get(Plant{}, NotFound, 20, 30), get(Plant{}, NotFound, 40, 50)}, true},
		{"an updated plant, then a create of another: 409", []Op{create(p, OK, 0, 10), put("", Plant{}, OK, 20, 30), create(p, Conflict, 40, 50), get(r, OK, 60, 70)}, true},
		{"an updated plant, then a create of another answered 200", []Op{create(p, OK, 0, 10), put("", Plant{}, OK, 20, 30), create(p, OK, 40, 50)}, false},
		{"If-Match with the current ETag", []Op{create(p, OK, 0, 10), put(`"e"`, p, OK, 20, 30), get(r, OK, 40, 50)}, true},
		{"If-Match with the current ETag answered 412", []Op{create(p, OK, 0, 10), put(`"e"`, p, PreconditionFailed, 20, 30)}, false},
		{"If-Match with a stale ETag answered 412", []Op{create(q, OK, 0, 10), put(`"e"`, p, PreconditionFailed, 20, 30), get(q, OK, 40, 50)}, true},
		{"If-Match with a stale ETag answered 200", []Op{create(q, OK, 0, 10), put(`"e"`, p, OK, 20, 30)}, false},
		{"If-Match with a wrong ETag answered 200", []Op{create(p, OK, 0, 10), put(`"wrong"`, Plant{}, OK, 20, 30)}, false},
		{"If-Match on an absent plant answered 412", []Op{put("*", Plant{}, PreconditionFailed, 0, 10)}, true},
		{"If-Match on an absent plant answered 404", []Op{put("*", Plant{}, NotFound, 0, 10)}, false},
		{"If-Match * on a present plant", []Op{create(p, OK, 0, 10), put("*", Plant{}, OK, 20, 30), get(r, OK, 40, 50)}, true},
		{"If-Match * on a present plant answered 412", []Op{create(p, OK, 0, 10), put("*", Plant{}, PreconditionFailed, 20, 30)}, false},
		{"two updates with one ETag both answered 200", []Op{create(p, OK, 0, 10), put(`"e"`, p, OK, 20, 30), put(`"e"`, p, OK, 20, 30)}, false},
		{"an unknown update seen applied", []Op{create(p, OK, 0, 10), put(`"e"`, p, Unknown, 20, 30), get(p, OK, 40, 50), get(r, OK, 60, 70)}, true},
		{"an unknown update never seen", []Op{create(p, OK, 0, 10), put("", Plant{}, Unknown, 20, 30), get(p, OK, 40, 50)}, true},
		{"an unknown update with a stale ETag seen applied", []Op{create(q, OK, 0, 10), put(`"e"`, p, Unknown, 20, 30), get(r, OK, 40, 50)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			v, err := Check(tc.ops, IDWindow{First: 7, Size: 2}, []FaultRecord{{Name: "kill", Start: 5, End: 15}}, CheckLimits{PerPartition: time.Minute}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Result == "Ok"; got != tc.ok {
				t.Fatalf("linearizable = %v (%s), want %v", got, v.Result, tc.ok)
			}
			if !tc.ok {
				if len(v.HTML) != 1 {
					t.Fatalf("visualisations = %q, want one", v.HTML)
				}
				if _, err := os.Stat(v.HTML[0]); err != nil {
					t.Fatalf("no visualisation written: %v", err)
				}
			}
		})
	}
}

// TestObservations: a page covers the ids above its cursor, up to its last
// id when a next page follows.
func TestObservations(t *testing.T) {
	page := []Plant{{ID: 3, Name: "a", Tag: "red"}, {ID: 5, Name: "b", Tag: "red"}}
	op := Op{Kind: List, Tag: "red", HasAfter: true, After: 2, Page: page, More: true}
	got := observations(op, []int64{1, 2, 3, 4, 5, 6})
	want := []observation{{page[0], OK}, {Plant{ID: 4}, NotFound}, {page[1], OK}}
	if len(got) != len(want) {
		t.Fatalf("observations = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("observations = %v, want %v", got, want)
		}
	}
	op.More = false // the last page: it says 6 is not there either
	if got := observations(op, []int64{1, 2, 3, 4, 5, 6}); len(got) != 4 || got[3] != (observation{Plant{ID: 6}, NotFound}) {
		t.Fatalf("last page observations = %v", got)
	}
}

// TestCheckUndecided: an id whose search cannot end within its time limit
// is reported undecided, with its size, and the other ids are still
// decided. Forty writes of unknown outcome, all concurrent, then a read
// that none of them explains: the search tries their subsets.
func TestCheckUndecided(t *testing.T) {
	var ops []Op
	for i := range 40 {
		kind := Create
		if i%2 == 1 {
			kind = Delete
		}
		ops = append(ops, Op{Client: i, Kind: kind, ID: 7, Name: "a", Tag: "red", Answer: Unknown, Call: time.Duration(i), Return: 1000})
	}
	ops = append(ops,
		Op{Client: 50, Kind: Get, ID: 7, Got: Plant{ID: 7, Name: "b", Tag: "red"}, Answer: OK, Call: 2000, Return: 2001},
		Op{Client: 51, Kind: Create, ID: 8, Name: "c", Tag: "red", Answer: OK, Call: 0, Return: 10},
		Op{Client: 51, Kind: Get, ID: 8, Got: Plant{ID: 8, Name: "c", Tag: "red"}, Answer: OK, Call: 20, Return: 30},
	)
	v, err := Check(ops, IDWindow{First: 7, Size: 2}, nil, CheckLimits{PerPartition: 500 * time.Millisecond}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if v.Result != "Unknown" || len(v.Illegal) != 0 {
		t.Fatalf("result %s, illegal %v; want Unknown and none illegal", v.Result, v.Illegal)
	}
	want := []IDHistory{{ID: 7, Operations: 41, Pending: 40}}
	if !slices.Equal(v.Undecided, want) {
		t.Fatalf("undecided = %v, want %v", v.Undecided, want)
	}
	if v.Partitions != 2 || v.Largest != 41 {
		t.Fatalf("partitions %d, largest %d; want 2 and 41", v.Partitions, v.Largest)
	}
}
