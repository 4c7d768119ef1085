package chaos

// storesNeeded is, for each plant (by its webhook body) that a create saw
// answered 200, how many times the history proves it was stored: each
// store writes one event, so that many distinct events must be delivered.
//
// Comparing sets of plants alone would let a lost event hide behind an
// earlier one: the workload creates, deletes and creates the same plant
// again, so most plants are stored several times. A chain in real-time
// order, a create of P answered 200, then a delete of P's id answered 204
// invoked after that, then a create of P answered 200 invoked after the
// delete returned, proves two stores of P: the first at or before the
// first create's answer, the second after the delete took P's id empty
// (the second create either stored P or found an identical P that another
// store put there meanwhile). The longest such chain, found greedily by
// always taking the operation that returns first, is the count. It is a
// lower bound that rests on linearizability, which the run checks too.
//
// Updates (PUT) store no event and are left out: an acknowledged create
// may be followed by an update that changes the plant (the event keeps the
// content at creation). The count also rests on an update never putting
// under an id a plant that a create sends (see updates in workload.go):
// otherwise a re-create after the delete could find P put there by an
// update, answer 200, and prove no second store.
func storesNeeded(ops []Op) map[string]int {
	type span struct{ call, ret int64 }
	creates := map[string][]span{} // body: its acknowledged creates
	deletes := map[int64][]span{}  // id: its acknowledged deletes
	idOf := map[string]int64{}
	for _, op := range ops {
		s := span{int64(op.Call), int64(op.Return)}
		switch {
		case op.Kind == Create && op.Answer == OK:
			body := webhookBody(Plant{ID: op.ID, Name: op.Name, Tag: op.Tag})
			creates[body] = append(creates[body], s)
			idOf[body] = op.ID
		case op.Kind == Delete && op.Answer == OK:
			deletes[op.ID] = append(deletes[op.ID], s)
		}
	}
	// firstAfter is the span invoked after t that returns first.
	firstAfter := func(spans []span, t int64) (span, bool) {
		best, ok := span{}, false
		for _, s := range spans {
			if s.call > t && (!ok || s.ret < best.ret) {
				best, ok = s, true
			}
		}
		return best, ok
	}
	need := make(map[string]int, len(creates))
	for body, cs := range creates {
		t := int64(-1 << 62)
		for {
			c, ok := firstAfter(cs, t)
			if !ok {
				break
			}
			need[body]++
			d, ok := firstAfter(deletes[idOf[body]], c.ret)
			if !ok {
				break
			}
			t = d.ret
		}
	}
	return need
}
