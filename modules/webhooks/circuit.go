package webhooks

import (
	"sync"
	"sync/atomic"
	"time"
)

// circuitFailures is how many attempts in a row must fail before an
// endpoint's circuit opens. A receiver that fails now and then never gets
// there; one that is down does within a moment.
const circuitFailures = 10

// circuitMaxOpen bounds how long an open circuit waits before its next
// probe, in units of the first retry's wait (5 s by default: a minute).
const circuitMaxOpen = 12

// circuit is one endpoint's breaker, on this replica. While an endpoint is
// down, attempting every event (a dial, a log line and an outbox write each,
// at the create rate) would cost the replica more than its creates do, and
// would spend each event's attempts on an outage. After circuitFailures
// failed attempts in a row the circuit opens: no attempt starts and creates
// write their rows due rather than handed off. Once the first retry's wait
// has passed, one event is attempted as a probe: a success closes the
// circuit and the backlog flows; a failure opens it again for twice as long,
// up to circuitMaxOpen times that wait. Events wait in the outbox
// meanwhile, their attempts unspent, as they do for an endpoint that
// answered 410.
type circuit struct {
	open atomic.Bool // read by every create's handoff reservation

	mu       sync.Mutex
	failures int           // failed attempts in a row
	wait     time.Duration // the last open's length
	until    time.Time     // open until then: a probe may start
	probing  bool          // the probe is in flight
	base     time.Duration // the first open's length
}

func newCircuit(base time.Duration) *circuit { return &circuit{base: base} }

// allowed is how many attempts may start now out of want: want when the
// circuit is closed; 1, the probe, once an open circuit's wait is over;
// and 0 otherwise.
func (c *circuit) allowed(want int, now time.Time) (n int, probe bool) {
	if !c.open.Load() {
		return want, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.open.Load() {
		return want, false
	}
	if c.probing || now.Before(c.until) || want == 0 {
		return 0, false
	}
	c.probing = true
	return 1, true
}

// unused gives back a probe that allowed granted but no event used (none
// was due).
func (c *circuit) unused() {
	c.mu.Lock()
	c.probing = false
	c.mu.Unlock()
}

// succeeded records a delivered attempt, the probe or not, and reports
// whether it closed the circuit.
func (c *circuit) succeeded() (closed bool) {
	return c.reset()
}

// reset closes the circuit, as after a change of the webhooks file: the
// endpoint is tried as if new.
func (c *circuit) reset() (wasOpen bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wasOpen = c.open.Swap(false)
	c.failures, c.wait, c.probing = 0, 0, false
	return wasOpen
}

// failed records a failed attempt, the probe or not, and reports the wait
// when it opened the circuit (again).
func (c *circuit) failed(probe bool, now time.Time) (opened time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures++
	if probe {
		c.probing = false
	}
	switch {
	case c.open.Load() && !probe:
		return 0 // an attempt that started before the circuit opened
	case !c.open.Load() && c.failures < circuitFailures:
		return 0
	}
	c.wait = min(max(2*c.wait, c.base), circuitMaxOpen*c.base)
	c.until = now.Add(c.wait)
	c.open.Store(true)
	return c.wait
}
