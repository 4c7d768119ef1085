package plants

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// Every answer a store can give (plant.Answers), wrapped or not, is a 4xx
// in the one error shape, logged as nothing, counted as no creation, and
// labelled in the store metrics with its own name, never "error": a new
// answer added to the domain package without a status fails here.
func TestEveryStoreAnswerIsAClientAnswer(t *testing.T) {
	for _, answer := range plant.Answers {
		for _, err := range []error{answer, fmt.Errorf("store: plant 7: %w", answer)} {
			t.Run(err.Error(), func(t *testing.T) {
				core, logs := observer.New(zap.DebugLevel)
				h, created := newCreateHandler(t, failingStore{err: err}, zap.New(core))
				rec := postPlant(h, `{"id":7,"name":"a"}`)
				if rec.Code < 400 || rec.Code > 499 {
					t.Fatalf("status = %d, want a 4xx; body %s", rec.Code, rec.Body)
				}
				status, message, ok := answerStatus(err, 7)
				if !ok || status != rec.Code {
					t.Fatalf("answerStatus = %d, %q, %v; the handler answered %d", status, message, ok, rec.Code)
				}
				assertErrorRecorded(t, rec, status, message)
				if n := len(logs.All()); n != 0 {
					t.Fatalf("logged %d lines for an answer, want none", n)
				}
				if testutil.ToFloat64(created) != 0 {
					t.Fatal("an answer was counted as a creation")
				}
				if got, want := storeResult(err), plant.AnswerOf(err); want == "" || got != want {
					t.Fatalf("store result label = %q, want the answer's name %q", got, want)
				}
			})
		}
	}
}

// A failure is not an answer: it gets no 4xx.
func TestFailuresAreNotAnswers(t *testing.T) {
	for _, err := range []error{plant.ErrUnavailable, fmt.Errorf("disk: %w", plant.ErrUnavailable), fmt.Errorf("boom")} {
		if plant.IsAnswer(err) {
			t.Errorf("IsAnswer(%v) = true", err)
		}
		if _, _, ok := answerStatus(err, 1); ok {
			t.Errorf("answerStatus(%v) is an answer", err)
		}
	}
	if plant.IsAnswer(nil) {
		t.Error("IsAnswer(nil) = true")
	}
}
