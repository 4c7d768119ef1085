package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is the checker's finding on a history.
type Verdict struct {
	Result     porcupine.CheckResult // Ok, Illegal, or Unknown (timed out)
	Operations int                   // Porcupine operations (list pages split per id)
	Took       time.Duration
	HTML       string // the visualisation, written when the result is not Ok
}

// Check checks the history against Model. When it is not linearizable (or
// the check ran out of time) Porcupine's HTML visualisation is written into
// dir, with the faults as annotations, and its path returned in the verdict.
func Check(ops []Op, ids []int64, faults []FaultRecord, timeout time.Duration, dir string) (Verdict, error) {
	history := operations(ops, ids)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(Model, history, timeout)
	v := Verdict{Result: res, Operations: len(history), Took: time.Since(start)}
	if res == porcupine.Ok {
		return v, nil
	}
	info.AddAnnotations(annotations(faults))
	v.HTML = filepath.Join(dir, "linearizability.html")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return v, err
	}
	if err := porcupine.VisualizePath(Model, info, v.HTML); err != nil {
		return v, fmt.Errorf("write the visualisation: %w", err)
	}
	return v, nil
}

// annotations shows each fault as a bar on the visualisation's timeline.
func annotations(faults []FaultRecord) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(faults))
	for _, f := range faults {
		out = append(out, porcupine.Annotation{
			Tag:             "nemesis",
			Start:           int64(f.Start),
			End:             int64(f.End),
			Description:     f.Name,
			Details:         f.Detail,
			BackgroundColor: "#ffd0d0",
		})
	}
	return out
}
