package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/filewatch"
)

// fileSource keeps a tokenSet in step with a tokens file, reloading it whenever
// its directory changes (see filewatch: editors and Kubernetes Secret
// volumes replace files by renaming).
type fileSource struct {
	path   string
	tokens *tokenSet
	log    *zap.Logger
	watch  *filewatch.Watcher
	loaded [sha256.Size]byte // digest of the content last loaded
}

// newFileSource loads path into tokens once; Start begins watching it. A
// missing or unreadable file is an error: the program must not start with
// tokens it cannot read.
func newFileSource(path string, tokens *tokenSet, log *zap.Logger) (*fileSource, error) {
	fs := &fileSource{path: path, tokens: tokens, log: log}
	if err := fs.load(false); err != nil {
		return nil, err
	}
	// Any change in the directory may be our file (directly, through a
	// rename, or through a symlink swap); re-reading is cheap.
	fs.watch = filewatch.New(path, fs.reload, func(err error) { log.Warn("tokens file watch error", zap.Error(err)) })
	return fs, nil
}

// errNoTokensInFile refuses a reload that finds no token: a file rewritten
// in place is empty between the truncate and the write, and acting on that
// moment would lock every client out.
var errNoTokensInFile = errors.New("tokens file lists no token")

// load reads the file into tokens. With refuseEmpty (a reload), a file that
// lists no token leaves the current tokens in place.
func (fs *fileSource) load(refuseEmpty bool) error {
	data, err := os.ReadFile(fs.path)
	if err != nil {
		return fmt.Errorf("read tokens file: %w", err)
	}
	tokens, err := parseTokens(string(data))
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

// Start watches the file and reloads it on every change. Its signature is
// an Fx start hook's.
func (fs *fileSource) Start(ctx context.Context) error { return fs.watch.Start(ctx) }

func (fs *fileSource) reload() {
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

// Stop ends the watch. Its signature is an Fx stop hook's.
func (fs *fileSource) Stop(ctx context.Context) error { return fs.watch.Stop(ctx) }
