package telemetry

import (
	"net/http"
	"testing"
)

// The exchange hides the server writer's optional interfaces; a handler
// behind it still reaches them through http.ResponseController.
func TestHandlersReachTheServerWriterThroughTheExchange(t *testing.T) {
	var flushErr error
	c := newChain(t, false, plantsRoute(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("part"))
		flushErr = http.NewResponseController(w).Flush()
	})))
	w := c.do(http.MethodPost, "/plants", "")
	if flushErr != nil {
		t.Fatalf("Flush through the exchange: %v", flushErr)
	}
	if !w.Flushed || w.Body.String() != "part" {
		t.Errorf("recorder flushed %v with body %q, want flushed \"part\"", w.Flushed, w.Body.String())
	}
	lines := c.accessLines()
	if len(lines) != 1 || lines[0].ContextMap()["bytes"] != int64(4) {
		t.Errorf("access lines %v, want one with bytes 4", lines)
	}
}
