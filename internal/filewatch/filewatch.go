// Package filewatch tells when a file may have changed, for the files the
// program reloads (tokens, webhook endpoints). It watches the file's
// directory rather than the file: editors and Kubernetes Secret volumes
// replace files by renaming (Kubernetes swaps a "..data" symlink), which a
// watch on the file itself would miss. Callers re-read the file and compare
// it with what they loaded: an event says "look", not what changed.
//
// A rewrite is a burst of events (a truncate, then one write or many, or a
// create and a rename), and reading in its middle finds the file empty or
// half-written. So the watcher lets a burst settle: it calls once the
// directory has been quiet for quietPeriod, or maxDelay after the burst's first
// event when it never goes quiet (a busy directory must not starve the
// reload).
package filewatch

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// quietPeriod is how long the directory must see no event before the file is
// read: a writer's truncate and its writes come within microseconds of
// each other, and a person's or a tool's next rewrite much later.
const quietPeriod = 100 * time.Millisecond

// maxDelay bounds the wait from a burst's first event to the call, for a
// directory that is never quiet for quietPeriod.
const maxDelay = 2 * time.Second

// Watcher calls changed once a burst of events in the file's directory has
// settled, and onError with the watch's own errors. Both run on its
// goroutine, one at a time.
type Watcher struct {
	path    string
	changed func()
	onError func(error)
	watcher *fsnotify.Watcher
	done    chan struct{}
}

// New returns a watcher of path; Start begins watching.
func New(path string, changed func(), onError func(error)) *Watcher {
	return &Watcher{path: path, changed: changed, onError: onError, done: make(chan struct{})}
}

// Start begins watching. Its signature is an Fx start hook's.
func (w *Watcher) Start(context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.path, err)
	}
	if err := fw.Add(filepath.Dir(w.path)); err != nil {
		_ = fw.Close()
		return fmt.Errorf("watch %s: %w", w.path, err)
	}
	w.watcher = fw
	go func() {
		defer close(w.done)
		settle(fw.Events, fw.Errors, w.changed, w.onError)
	}()
	return nil
}

// settle calls changed once per settled burst of events, and onError with
// every error, until either channel is closed. A burst still settling
// then is not reported: after Stop nothing is called.
func settle[E any](events <-chan E, errs <-chan error, changed func(), onError func(error)) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var first time.Time // the unreported burst's first event; zero when none
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			timer.Reset(min(quietPeriod, first.Add(maxDelay).Sub(now)))
		case err, ok := <-errs:
			if !ok {
				return
			}
			onError(err)
		case <-timer.C:
			first = time.Time{}
			changed()
		}
	}
}

// Stop ends the watch and waits for the last call to return. Its signature
// is an Fx stop hook's.
func (w *Watcher) Stop(context.Context) error {
	if w.watcher == nil {
		return nil
	}
	err := w.watcher.Close()
	<-w.done
	return err
}
