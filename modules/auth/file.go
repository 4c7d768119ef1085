package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// FileSource keeps Tokens in step with a tokens file. It watches the file's
// directory rather than the file: editors and Kubernetes Secret volumes
// replace files by renaming (Kubernetes swaps a "..data" symlink), which a
// watch on the file itself would miss.
type FileSource struct {
	path    string
	tokens  *Tokens
	log     *zap.Logger
	watcher *fsnotify.Watcher
	done    chan struct{}
	loaded  [sha256.Size]byte // digest of the content last loaded
}

// NewFileSource loads path into tokens once; Start begins watching it. A
// missing or unreadable file is an error: the program must not start with
// tokens it cannot read.
func NewFileSource(path string, tokens *Tokens, log *zap.Logger) (*FileSource, error) {
	fs := &FileSource{path: path, tokens: tokens, log: log, done: make(chan struct{})}
	if err := fs.load(false); err != nil {
		return nil, err
	}
	return fs, nil
}

// errNoTokensInFile refuses a reload that finds no token: a file rewritten
// in place is empty between the truncate and the write, and acting on that
// moment would lock every client out.
var errNoTokensInFile = errors.New("tokens file lists no token")

// load reads the file into tokens. With refuseEmpty (a reload), a file that
// lists no token leaves the current tokens in place.
func (fs *FileSource) load(refuseEmpty bool) error {
	data, err := os.ReadFile(fs.path)
	if err != nil {
		return fmt.Errorf("read tokens file: %w", err)
	}
	tokens, err := ParseTokens(string(data))
	if err != nil {
		return err
	}
	if refuseEmpty && len(tokens) == 0 {
		return errNoTokensInFile
	}
	fs.tokens.Replace(tokens)
	fs.loaded = sha256.Sum256(data)
	return nil
}

// Start watches the file and reloads it on every change.
func (fs *FileSource) Start(context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch tokens file: %w", err)
	}
	if err := w.Add(filepath.Dir(fs.path)); err != nil {
		_ = w.Close()
		return fmt.Errorf("watch tokens file: %w", err)
	}
	fs.watcher = w
	go fs.watch()
	return nil
}

func (fs *FileSource) watch() {
	defer close(fs.done)
	for {
		select {
		case _, ok := <-fs.watcher.Events:
			if !ok {
				return
			}
			// Any change in the directory may be our file (directly, through a
			// rename, or through a symlink swap); re-reading is cheap.
			fs.reload()
		case err, ok := <-fs.watcher.Errors:
			if !ok {
				return
			}
			fs.log.Warn("tokens file watch error", zap.Error(err))
		}
	}
}

func (fs *FileSource) reload() {
	before := fs.loaded
	if err := fs.load(true); err != nil {
		// Mid-rotation the file may be briefly absent or empty: keep the
		// tokens we have until it is back.
		fs.log.Warn("tokens file not reloaded; keeping the current tokens", zap.Error(err))
		return
	}
	if fs.loaded != before {
		fs.log.Info("tokens file reloaded", zap.Int("tokens", fs.tokens.Len()))
	}
}

// Stop ends the watch.
func (fs *FileSource) Stop(context.Context) error {
	if fs.watcher == nil {
		return nil
	}
	err := fs.watcher.Close()
	<-fs.done
	return err
}
