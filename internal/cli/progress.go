package cli

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// progress prints a count, a rate and, when the total is known, an ETA on
// one refreshed stderr line, only when stderr is a terminal: piped or
// redirected, a command stays quiet for the logs.
type progress struct {
	verb  string
	total int64 // 0 when unknown
	n     atomic.Int64
	out   io.Writer
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// startProgress starts the line on stderr when it is a terminal; add and
// finish work either way.
func startProgress(stderr io.Writer, verb string, total int64) *progress {
	p := &progress{verb: verb, total: total, out: stderr, start: time.Now()}
	if !isTerminal(stderr) {
		return p
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				p.print()
				fmt.Fprintln(p.out)
				return
			case <-tick.C:
				p.print()
			}
		}
	}()
	return p
}

func (p *progress) add(n int64) { p.n.Add(n) }

func (p *progress) print() {
	n := p.n.Load()
	elapsed := time.Since(p.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(n) / elapsed
	}
	line := fmt.Sprintf("\r%s %d plants, %.0f/s", p.verb, n, rate)
	if p.total > 0 {
		line = fmt.Sprintf("\r%s %d/%d plants, %.0f/s", p.verb, n, p.total, rate)
		if rate > 0 {
			eta := time.Duration(float64(p.total-n) / rate * float64(time.Second)).Round(time.Second)
			line += ", ETA " + eta.String()
		}
	}
	fmt.Fprint(p.out, line+"   ")
}

// finish ends the progress line.
func (p *progress) finish() {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
}
