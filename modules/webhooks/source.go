package webhooks

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/filewatch"
)

// Source keeps the dispatcher's endpoints in step with the webhooks file.
// A file that does not read or check on reload leaves the endpoints as
// they are and says why in the log: a half-written file must not stop the
// deliveries.
type Source struct {
	path      string
	allowHTTP bool
	d         *Dispatcher
	metrics   *Metrics
	log       *zap.Logger
	watch     *filewatch.Watcher
	loaded    [sha256.Size]byte
}

// ReadFile reads and checks the webhooks file at path. Its error is meant
// for the one line of a failed start.
func ReadFile(path string, allowHTTP bool) (File, [sha256.Size]byte, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the operator names this file (--webhooks-file)
	if err != nil {
		return File{}, [sha256.Size]byte{}, fmt.Errorf("--webhooks-file: %w", err)
	}
	f, err := ParseFile(data, allowHTTP)
	if err != nil {
		return File{}, [sha256.Size]byte{}, fmt.Errorf("--webhooks-file %s: %w", path, err)
	}
	return f, sha256.Sum256(data), nil
}

// NewSource watches the file at path, whose content digest loaded is what
// d runs with; Start begins watching.
func NewSource(path string, allowHTTP bool, loaded [sha256.Size]byte, d *Dispatcher, metrics *Metrics, log *zap.Logger) *Source {
	s := &Source{path: path, allowHTTP: allowHTTP, d: d, metrics: metrics, log: log, loaded: loaded}
	s.watch = filewatch.New(path, s.reload, func(err error) { log.Warn("webhooks file watch error", zap.Error(err)) })
	return s
}

// Start begins watching. Its signature is an Fx start hook's.
func (s *Source) Start(ctx context.Context) error { return s.watch.Start(ctx) }

// Stop ends the watch. Its signature is an Fx stop hook's.
func (s *Source) Stop(ctx context.Context) error { return s.watch.Stop(ctx) }

func (s *Source) reload() {
	f, digest, err := ReadFile(s.path, s.allowHTTP)
	if err != nil {
		s.metrics.reloads.WithLabelValues("refused").Inc()
		s.log.Warn("webhooks file not reloaded; keeping the current endpoints", zap.Error(err))
		return
	}
	if digest == s.loaded {
		return
	}
	s.loaded = digest
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	s.d.Apply(ctx, f)
	s.metrics.reloads.WithLabelValues("applied").Inc()
	s.log.Info("webhooks file reloaded", zap.Int("endpoints", len(f.Endpoints)))
}
