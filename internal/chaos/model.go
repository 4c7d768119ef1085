package chaos

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// The model is the store's contract for one id (the history is partitioned
// by id: operations on different ids never constrain each other, and a
// small state per partition keeps the search cheap).
//
//   - create: 200 if the id is absent (it is then stored) or holds the
//     identical plant; 409 if it holds another.
//   - get: 200 with the stored plant, 404 if absent.
//   - delete: 204 if present (then absent), 404 if absent.
//   - update without If-Match: 200 if present (it then holds the plant
//     sent), 404 if absent: PUT never creates.
//   - update with If-Match: 200 if present and the condition holds ("*":
//     any plant; an entity tag: the plant it names, by content, since the
//     ETag is a digest of name and tag), then it holds the plant sent; 412
//     if absent or another plant.
//   - list: a page is split into one observation per id it covers (see
//     observations): each id on the page is present with that plant; each
//     id in the covered range not on it is absent or has another tag.
//     Checking the observations id by id is weaker than checking the page
//     as one snapshot, but sound: a history whose parts are not
//     linearizable is not linearizable whole.
//
// An unknown answer may have taken effect or not, at any time after its
// call: its return is at infinity (the standard Porcupine encoding), and
// the step accepts it with the effect it would have had. Reads with unknown
// answers say nothing and are left out.

// state is one id's value.
type state struct {
	present   bool
	name, tag string
}

// input is an operation on one id; for an observation, tag is the list's
// filter.
type input struct {
	id        int64
	kind      Kind
	name, tag string
	ifMatch   string // update: "" none, "*", or an entity tag naming match
	match     Plant  // update: the content ifMatch names; Name "" for none
	answered  int64  // when the client had its answer (or gave up); the return of an unknown is at infinity
}

// output is an answer on one id; for an observation, answer OK means on
// the page (with name and tag), NotFound not on it.
type output struct {
	answer    Answer
	name, tag string
}

func step(s, in, out any) (bool, any) {
	st, i, o := s.(state), in.(input), out.(output)
	switch i.kind {
	case Create:
		same := st.present && st.name == i.name && st.tag == i.tag
		switch o.answer {
		case Unknown:
			if !st.present {
				return true, state{true, i.name, i.tag}
			}
			return true, st
		case OK:
			if !st.present {
				return true, state{true, i.name, i.tag}
			}
			return same, st
		case Conflict:
			return st.present && !same, st
		}
	case Get:
		switch o.answer {
		case OK:
			return st.present && st.name == o.name && st.tag == o.tag, st
		case NotFound:
			return !st.present, st
		}
	case Delete:
		switch o.answer {
		case Unknown:
			return true, state{}
		case OK:
			return st.present, state{}
		case NotFound:
			return !st.present, st
		}
	case Update:
		holds := st.present
		if i.ifMatch != "" && i.ifMatch != "*" {
			holds = holds && i.match.Name != "" && st.name == i.match.Name && st.tag == i.match.Tag
		}
		updated := state{true, i.name, i.tag}
		switch o.answer {
		case Unknown:
			if holds {
				return true, updated
			}
			return true, st
		case OK:
			return holds, updated
		case NotFound:
			return i.ifMatch == "" && !st.present, st
		case PreconditionFailed:
			return i.ifMatch != "" && !holds, st
		}
	case List:
		switch o.answer {
		case OK:
			return st.present && st.tag == i.tag && o.tag == i.tag && st.name == o.name, st
		case NotFound:
			return !st.present || st.tag != i.tag, st
		}
	}
	return false, st
}

// Model is the per-id Porcupine model of the store.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byID := map[int64][]porcupine.Operation{}
		for _, op := range history {
			id := op.Input.(input).id
			byID[id] = append(byID[id], op)
		}
		out := make([][]porcupine.Operation, 0, len(byID))
		for _, id := range slices.Sorted(maps.Keys(byID)) {
			out = append(out, byID[id])
		}
		return out
	},
	Init: func() any { return state{} },
	Step: step,
	DescribeOperation: func(in, out any) string {
		i, o := in.(input), out.(output)
		id := strconv.FormatInt(i.id, 10)
		switch i.kind {
		case Create:
			return fmt.Sprintf("create(%s, %s/%s) -> %s", id, i.name, i.tag, o.answer)
		case Get:
			if o.answer == OK {
				return fmt.Sprintf("get(%s) -> %s/%s", id, o.name, o.tag)
			}
			return fmt.Sprintf("get(%s) -> %s", id, o.answer)
		case Delete:
			return fmt.Sprintf("delete(%s) -> %s", id, o.answer)
		case Update:
			cond := ""
			switch {
			case i.ifMatch == "*":
				cond = ", If-Match *"
			case i.ifMatch != "" && i.match.Name == "":
				cond = ", If-Match a wrong tag"
			case i.ifMatch != "":
				cond = ", If-Match " + i.match.Name + "/" + i.match.Tag
			}
			return fmt.Sprintf("update(%s, %s/%s%s) -> %s", id, i.name, i.tag, cond, o.answer)
		default:
			if o.answer == OK {
				return fmt.Sprintf("list(tag=%s) shows %s: %s", i.tag, id, o.name)
			}
			return fmt.Sprintf("list(tag=%s) lacks %s", i.tag, id)
		}
	},
	DescribeState: func(s any) string {
		st := s.(state)
		if !st.present {
			return "absent"
		}
		return st.name + "/" + st.tag
	},
}

// unknownReturn is the return time of an operation whose outcome is
// unknown: it may take effect at any time after its call.
const unknownReturn = math.MaxInt64

// operations turns the history into Porcupine's operations. A list page
// is split over the ids of the window at its call (see observations): the
// ids the workload was using then. Ids outside it are left out, which is
// sound (a weaker check) and keeps every list from adding an observation
// to every id the run ever used.
func operations(ops []Op, win IDWindow) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		call, ret := int64(op.Call), int64(op.Return)
		if op.Answer == Unknown {
			if op.Kind == Get || op.Kind == List {
				continue // a read that said nothing
			}
			ret = unknownReturn
		}
		if op.Answer == Unexpected {
			continue // reported on its own; the model has no such answer
		}
		add := func(in input, o output) {
			in.answered = int64(op.Return)
			out = append(out, porcupine.Operation{ClientId: op.Client, Input: in, Output: o, Call: call, Return: ret})
		}
		switch op.Kind {
		case Create, Delete:
			add(input{id: op.ID, kind: op.Kind, name: op.Name, tag: op.Tag}, output{answer: op.Answer})
		case Update:
			add(input{id: op.ID, kind: Update, name: op.Name, tag: op.Tag, ifMatch: op.IfMatch, match: op.Match}, output{answer: op.Answer})
		case Get:
			add(input{id: op.ID, kind: Get}, output{answer: op.Answer, name: op.Got.Name, tag: op.Got.Tag})
		case List:
			for _, o := range observations(op, win.IDs(op.Call)) {
				add(input{id: o.ID, kind: List, tag: op.Tag}, output{answer: o.answer, name: o.Name, tag: o.Tag})
			}
		}
	}
	return out
}

type observation struct {
	Plant
	answer Answer
}

// observations splits a list page into what it says about each id: those
// on it are present (OK, with their name), the other ids of the range it
// covers are not there with that tag (NotFound). The range is above the
// cursor and, when a next page follows, up to the page's last id.
func observations(op Op, ids []int64) []observation {
	on := map[int64]Plant{}
	for _, p := range op.Page {
		on[p.ID] = p
	}
	var last int64 = math.MaxInt64
	if op.More && len(op.Page) > 0 {
		last = op.Page[len(op.Page)-1].ID
	}
	var out []observation
	for _, id := range ids {
		if (op.HasAfter && id <= op.After) || id > last {
			continue
		}
		if p, ok := on[id]; ok {
			out = append(out, observation{p, OK})
		} else {
			out = append(out, observation{Plant{ID: id}, NotFound})
		}
	}
	return out
}
