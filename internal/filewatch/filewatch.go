// Package filewatch tells when a file may have changed, for the files the
// program reloads (tokens, webhook endpoints). It watches the file's
// directory rather than the file: editors and Kubernetes Secret volumes
// replace files by renaming (Kubernetes swaps a "..data" symlink), which a
// watch on the file itself would miss. Callers re-read the file and compare
// it with what they loaded: an event says "look", not what changed.
package filewatch

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// Watcher calls changed after every event in the file's directory, and
// onError with the watch's own errors. Both run on its goroutine, one at a
// time.
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
	go w.run()
	return nil
}

func (w *Watcher) run() {
	defer close(w.done)
	for {
		select {
		case _, ok := <-w.watcher.Events:
			if !ok {
				return
			}
			w.changed()
		case err, ok := <-w.watcher.Errors:
			if !ok {
				return
			}
			w.onError(err)
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
