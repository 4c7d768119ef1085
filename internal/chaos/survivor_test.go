package chaos

import (
	"slices"
	"testing"
	"time"
)

func at(op Op, call, ret int) Op {
	op.Call, op.Return = time.Duration(call), time.Duration(ret)
	return op
}

// TestCheckSurvivor: the final read must be the effect of an acknowledged
// write that may have been the last; an id with an unknown write that may
// be last is left to the search.
func TestCheckSurvivor(t *testing.T) {
	p := Plant{ID: 7, Name: "p7-0", Tag: "green"}
	create := func(a Answer) Op { return Op{Kind: Create, ID: 7, Name: p.Name, Tag: p.Tag, Answer: a} }
	read := func(got Plant, a Answer) Op { return Op{Kind: Get, ID: 7, Got: got, Answer: a} }
	for _, tc := range []struct {
		name             string
		ops              []Op
		checked, lostIDs int
	}{
		{"acknowledged and there", []Op{at(create(OK), 0, 10), at(read(p, OK), 20, 30)}, 1, 0},
		{"acknowledged and gone", []Op{at(create(OK), 0, 10), at(read(Plant{}, NotFound), 20, 30)}, 1, 1},
		{"deleted after, acknowledged", []Op{at(create(OK), 0, 10), at(Op{Kind: Delete, ID: 7, Answer: OK}, 15, 18), at(read(Plant{}, NotFound), 20, 30)}, 1, 0},
		{"a delete concurrent with the create", []Op{at(create(OK), 0, 10), at(Op{Kind: Delete, ID: 7, Answer: OK}, 5, 8), at(read(Plant{}, NotFound), 20, 30)}, 1, 0},
		{"an unknown delete may be last", []Op{at(create(OK), 0, 10), at(Op{Kind: Delete, ID: 7, Answer: Unknown}, 15, 18), at(read(Plant{}, NotFound), 20, 30)}, 0, 0},
		{"nothing acknowledged", []Op{at(create(Unknown), 0, 10), at(read(Plant{}, NotFound), 20, 30)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkSurvivor(tc.ops)
			if r.IDs != 1 || r.Checked != tc.checked || len(r.Lost) != tc.lostIDs {
				t.Fatalf("report %+v, want 1 id, %d checked, %d lost", r, tc.checked, tc.lostIDs)
			}
		})
	}
}

// TestLostAnnounced: an event for a plant whose creates were all unknown,
// with no delete or update that could have removed it, must find the plant
// in the final read.
func TestLostAnnounced(t *testing.T) {
	p := Plant{ID: 7, Name: "p7-0", Tag: "green"}
	body := webhookBody(p)
	create := at(Op{Kind: Create, ID: 7, Name: p.Name, Tag: p.Tag, Answer: Unknown}, 0, 10)
	got := map[string]int{body: 1}
	gone := at(Op{Kind: Get, ID: 7, Answer: NotFound}, 20, 30)
	if lost := lostAnnounced([]Op{create, gone}, got, nil); !slices.Equal(lost, []string{body}) {
		t.Fatalf("lost = %v, want %s", lost, body)
	}
	there := at(Op{Kind: Get, ID: 7, Got: p, Answer: OK}, 20, 30)
	if lost := lostAnnounced([]Op{create, there}, got, nil); len(lost) != 0 {
		t.Fatalf("lost = %v, want none", lost)
	}
	del := at(Op{Kind: Delete, ID: 7, Answer: Unknown}, 12, 15)
	if lost := lostAnnounced([]Op{create, del, gone}, got, nil); len(lost) != 0 {
		t.Fatalf("lost = %v with an unknown delete after, want none", lost)
	}
	if lost := lostAnnounced([]Op{create, gone}, got, map[string]int{body: 1}); len(lost) != 0 {
		t.Fatalf("lost = %v for an acknowledged plant (the survivor check's), want none", lost)
	}
}
