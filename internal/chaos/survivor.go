package chaos

import (
	"fmt"
	"maps"
	"slices"
)

// SurvivorReport is what the final reads found against the acknowledged
// changes: the database that survived the faults must hold, for every id,
// the effect of a write that may have been the last.
type SurvivorReport struct {
	IDs     int      // ids with a final read that said something
	Checked int      // of them, decided by this check (no unknown write could be last)
	Lost    []string // ids whose final state no acknowledged last write explains
}

// checkSurvivor holds each id's final read against its writes. A write w
// may be the last one unless an acknowledged write was invoked after w
// returned. When every write that may be last is acknowledged, the final
// state must be the effect of one of them (a create or update: its plant;
// a delete: absent); an id with a write of unknown outcome among them is
// left to the linearizability check. This is weaker than that check but
// needs no search, so it decides every id even when the search of an id
// runs out of time.
func checkSurvivor(ops []Op) SurvivorReport {
	final := map[int64]Op{}
	writes := map[int64][]Op{}
	for _, op := range ops {
		switch {
		case op.Kind == Get && op.Answer != Unknown && op.Answer != Unexpected:
			if f, ok := final[op.ID]; !ok || op.Call > f.Call {
				final[op.ID] = op
			}
		case op.Kind == Create || op.Kind == Update || op.Kind == Delete:
			writes[op.ID] = append(writes[op.ID], op)
		}
	}
	var r SurvivorReport
	for _, id := range slices.Sorted(maps.Keys(final)) {
		f := final[id]
		r.IDs++
		// The latest call of an acknowledged write: every write that
		// returned before it is overwritten.
		var after int64 = -1
		for _, w := range writes[id] {
			if w.Answer == OK && w.Return < f.Call {
				after = max(after, int64(w.Call))
			}
		}
		if after < 0 {
			continue // nothing acknowledged before the final read
		}
		decided := true
		var states []Plant // the possible final states; Name "" is absent
		for _, w := range writes[id] {
			if int64(w.Return) < after && w.Answer != Unknown {
				continue
			}
			if w.Call > f.Call {
				continue // invoked after the final read: cannot explain it
			}
			if w.Answer == Unknown {
				decided = false
				break
			}
			if w.Answer != OK {
				continue // a 404, 409 or 412 changed nothing
			}
			if w.Kind == Delete {
				states = append(states, Plant{ID: id})
			} else {
				states = append(states, Plant{ID: id, Name: w.Name, Tag: w.Tag})
			}
		}
		if !decided {
			continue
		}
		r.Checked++
		got := Plant{ID: id}
		if f.Answer == OK {
			got = f.Got
		}
		if !slices.Contains(states, got) {
			r.Lost = append(r.Lost, fmt.Sprintf("id %d: final read %s at %s, the acknowledged writes that may be last left %v", id, describe(got), f.Call, states))
		}
	}
	return r
}

func describe(p Plant) string {
	if p.Name == "" {
		return "absent"
	}
	return p.Name + "/" + p.Tag
}

// violate records a lost acknowledged change.
func (r SurvivorReport) violate(c *Cluster) {
	if len(r.Lost) > 0 {
		c.Violate("survivor: %d ids lost an acknowledged change, e.g. %s", len(r.Lost), r.Lost[0])
	}
}

func (r SurvivorReport) String() string {
	return fmt.Sprintf("acknowledged changes on the survivor: %d ids read at the end, %d decided without the search, %d lost", r.IDs, r.Checked, len(r.Lost))
}
