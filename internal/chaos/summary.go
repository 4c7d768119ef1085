package chaos

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// judge holds the answers against the promises that are not the model's:
// the 5xx rule, the rolling restart without failures, no request routed to
// a cut replica once HAProxy took it out.
func judge(c *Cluster, ops []Op, faults []FaultRecord) {
	// during finds a picked fault that op overlaps: an operation invoked
	// just before a kill is in flight when it lands.
	during := func(op Op, pick func(FaultRecord) bool) *FaultRecord {
		for i := range faults {
			f := &faults[i]
			if pick(*f) && op.Call <= f.End && op.Return >= f.Start {
				return f
			}
		}
		return nil
	}
	for _, op := range ops {
		switch {
		case op.Answer == Unexpected:
			c.Violate("unexpected answer at %s: %s", op.Call.Round(time.Millisecond), op.Err)
		case op.Status == http.StatusServiceUnavailable && op.Err != "":
			c.Violate("%s at %s from %q: %s", op.Kind, op.Call.Round(time.Millisecond), op.Replica, op.Err)
		case op.Status >= 500 && op.Status != http.StatusServiceUnavailable:
			// A replica killed with requests in flight: HAProxy's own 502
			// for them is the one other 5xx a client can see.
			if op.Replica != "" || during(op, func(f FaultRecord) bool { return f.KillsInFlight }) == nil {
				c.Violate("%s at %s answered %d (replica %q)", op.Kind, op.Call.Round(time.Millisecond), op.Status, op.Replica)
			}
		}
		if op.Answer == Unknown || op.Status >= 500 {
			if f := during(op, func(f FaultRecord) bool { return f.ZeroFailures }); f != nil {
				c.Violate("%s failed during %s at %s: status %d %s", op.Kind, f.Name, op.Call.Round(time.Millisecond), op.Status, op.Err)
			}
		}
		if op.Replica != "" {
			// Requests HAProxy sent before it saw readiness fail may still
			// be answered; one sent a second after is a routing failure.
			if f := during(op, func(f FaultRecord) bool { return f.Replica == op.Replica && f.Down > 0 }); f != nil &&
				op.Call > f.Down+time.Second && op.Call < f.Healed {
				c.Violate("%s at %s was routed to %s, cut from the database and out of HAProxy since %s", op.Kind, op.Call.Round(time.Millisecond), op.Replica, f.Down.Round(time.Millisecond))
			}
		}
	}
}

// Summary is the report a run prints at its end.
func Summary(seed uint64, store string, ops []Op, faults []FaultRecord, phases []Phase, v Verdict, survivor SurvivorReport, hooks WebhookReport, events EventReport, feeds []FeedReport, cross CrossReport, violations []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary: store=%s seed=%d (replay: CHAOS_SEED=%d)\n", store, seed, seed)
	fmt.Fprintf(&b, "operations: %d\n", len(ops))
	for k := Create; k <= Update; k++ {
		counts := map[Answer]int{}
		statuses := map[int]int{}
		for _, op := range ops {
			if op.Kind == k {
				counts[op.Answer]++
				statuses[op.Status]++
			}
		}
		var parts []string
		for a := Unknown; a <= Unexpected; a++ {
			if counts[a] > 0 {
				parts = append(parts, fmt.Sprintf("%s=%d", a, counts[a]))
			}
		}
		var st []string
		for _, s := range slices.Sorted(maps.Keys(statuses)) {
			st = append(st, fmt.Sprintf("%d:%d", s, statuses[s]))
		}
		fmt.Fprintf(&b, "  %-7s %s  (statuses %s; 0 = no answer)\n", k, strings.Join(parts, " "), strings.Join(st, " "))
	}
	unknown, byLB := 0, 0
	for _, op := range ops {
		if op.Answer == Unknown {
			unknown++
			if op.Status != 0 && op.Replica == "" {
				byLB++
			}
		}
	}
	fmt.Fprintf(&b, "unknown outcomes: %d (answered by HAProxy itself: %d)\n", unknown, byLB)
	fmt.Fprintf(&b, "faults: %d\n", len(faults))
	for _, f := range faults {
		fmt.Fprintf(&b, "  %6.1fs-%6.1fs %-15s %s", f.Start.Seconds(), f.End.Seconds(), f.Name, f.Detail)
		if f.Name == Cut.Name || f.Name == Partition.Name {
			fmt.Fprintf(&b, "; /readyz 503 after %s, out of HAProxy after %s", f.ReadyzAfter.Round(time.Millisecond), f.HAProxyAfter.Round(time.Millisecond))
		}
		g, from := longestWithoutWriteIn(ops, f.Start, f.End)
		fmt.Fprintf(&b, "; longest write gap %s (from %.1fs)", g.Round(time.Millisecond), from.Seconds())
		if f.Err != nil {
			fmt.Fprintf(&b, "; ERROR %v", f.Err)
		}
		b.WriteString("\n")
	}
	gap, at := longestWithoutWrite(ops)
	fmt.Fprintf(&b, "longest stretch without a successful write: %s (from %.1fs)\n", gap.Round(time.Millisecond), at.Seconds())
	fmt.Fprintf(&b, "availability per phase (operations invoked in it that got a definite answer):\n")
	for _, p := range phases {
		total, ok := 0, 0
		for _, op := range ops {
			if op.Call >= p.Start && op.Call < p.End {
				total++
				if op.Answer != Unknown {
					ok++
				}
			}
		}
		pct := 100.0
		if total > 0 {
			pct = 100 * float64(ok) / float64(total)
		}
		fmt.Fprintf(&b, "  %6.1fs-%6.1fs %-15s %6.2f%% of %d\n", p.Start.Seconds(), p.End.Seconds(), p.Name, pct, total)
	}
	fmt.Fprintf(&b, "linearizability: %s (%d checked operations on %d ids, the largest %d; %s)\n", v.Result, v.Operations, v.Partitions, v.Largest, v.Took.Round(time.Millisecond))
	for _, p := range v.Illegal {
		fmt.Fprintf(&b, "  not linearizable: %s\n", p)
	}
	for _, h := range v.HTML {
		fmt.Fprintf(&b, "  visualisation: %s\n", h)
	}
	if len(v.Undecided) > 0 {
		fmt.Fprintf(&b, "  undecided (out of time, neither passed nor failed): %d ids\n", len(v.Undecided))
		for i, p := range v.Undecided {
			if i == 10 {
				fmt.Fprintf(&b, "    and %d more\n", len(v.Undecided)-i)
				break
			}
			fmt.Fprintf(&b, "    %s\n", p)
		}
	}
	b.WriteString(survivor.String() + "\n")
	b.WriteString(hooks.String() + "\n")
	b.WriteString(events.String() + "\n")
	for _, feed := range feeds {
		b.WriteString(feed.String() + "\n")
	}
	b.WriteString(cross.String() + "\n")
	fmt.Fprintf(&b, "violations: %d\n", len(violations))
	for _, s := range violations {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// longestWithoutWriteIn is the longest time within [from, to] without an
// acknowledged write (its answer's time), from its start.
func longestWithoutWriteIn(ops []Op, from, to time.Duration) (gap, at time.Duration) {
	var times []time.Duration
	for _, op := range ops {
		if (op.Kind == Create || op.Kind == Delete || op.Kind == Update) && op.Answer == OK && op.Return > from && op.Return < to {
			times = append(times, op.Return)
		}
	}
	slices.Sort(times)
	prev := from
	for _, t := range append(times, to) {
		if t-prev > gap {
			gap, at = t-prev, prev
		}
		prev = t
	}
	return gap, at
}

// longestWithoutWrite is the longest time between acknowledged writes
// (creates and updates answered 200, deletes 204), counted from the first operation.
func longestWithoutWrite(ops []Op) (gap, at time.Duration) {
	var times []time.Duration
	var first, last time.Duration = -1, 0
	for _, op := range ops {
		if first < 0 || op.Call < first {
			first = op.Call
		}
		last = max(last, op.Return)
		if (op.Kind == Create || op.Kind == Delete || op.Kind == Update) && op.Answer == OK {
			times = append(times, op.Return)
		}
	}
	slices.Sort(times)
	prev := max(first, 0)
	for _, t := range append(times, last) {
		if t-prev > gap {
			gap, at = t-prev, prev
		}
		prev = t
	}
	return gap, at
}
