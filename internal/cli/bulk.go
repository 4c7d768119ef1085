package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/plantstore/plantstore/client"
)

// importPlants sends plants in one stream to the server's bulk create and
// counts its results. The server tells created from unchanged itself, so
// a resumed import costs one write a plant and no read. A conflict follows
// onConflict: skip counts it; overwrite replaces the stored plant with
// If-Match its ETag (from the result: no read), on n workers; fail stops
// sending. A failure stops sending too, and the results of the plants
// already sent are still read, so the counts are exact for what was sent;
// what was sent stays, and a rerun resumes. client.ErrImportUnsupported
// means the server has no bulk create, and nothing was sent.
func importPlants(ctx context.Context, api *client.Client, plants []client.Plant, n int, onConflict string, stderr io.Writer) (counts, error) {
	var res counts
	var stop atomic.Bool
	var firstErr error
	var mu sync.Mutex // firstErr, failed and overwritten, which the overwriters share
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Failed++
		if firstErr == nil {
			firstErr = err
		}
		stop.Store(true)
	}
	prog := startProgress(stderr, "imported", int64(len(plants)))
	defer prog.finish()

	overwrites := make(chan client.Plant)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for p := range overwrites {
				if _, err := api.Update(ctx, client.Plant{ID: p.ID, Name: p.Name, Tag: p.Tag}, p.ETag); err != nil {
					fail(fmt.Errorf("plant %d: %w", p.ID, err))
					continue
				}
				mu.Lock()
				res.Overwritten++
				mu.Unlock()
				prog.add(1)
			}
		})
	}
	var streamErr error
	for from := 0; ; {
		rest := plants[from:]
		send := func(yield func(client.Plant) bool) {
			for _, p := range rest {
				if stop.Load() || !yield(p) {
					return
				}
			}
		}
		answered := 0
		streamErr = nil
		for r, err := range api.Import(ctx, send) {
			if err != nil {
				streamErr = err
				break
			}
			answered = r.Line
			p := rest[r.Line-1]
			switch r.Result {
			case client.ImportCreated:
				res.Created++
				prog.add(1)
			case client.ImportUnchanged:
				res.Unchanged++
				prog.add(1)
			case client.ImportConflict:
				switch {
				case onConflict == "skip":
					res.Skipped++
					prog.add(1)
				case onConflict == "overwrite" && r.Stored != nil:
					p.ETag = r.Stored.ETag
					overwrites <- p
				default:
					fail(fmt.Errorf("plant %d: %w: id already stored with a different name or tag (use --on-conflict=skip or overwrite)", p.ID, client.ErrConflict))
				}
			default: // refused (the file was checked, so not expected) or failed
				var err error = r.Err
				if r.Err == nil {
					err = fmt.Errorf("the server answered %q", r.Result)
				}
				fail(fmt.Errorf("plant %d: %w", p.ID, err))
			}
		}
		// A file larger than the server's cap on one stream
		// (--max-import-bytes) goes in several: each stream ends with a
		// 413 after the lines it took, and the next starts after them.
		var apiErr *client.Error
		if errors.As(streamErr, &apiErr) && apiErr.Status == http.StatusRequestEntityTooLarge &&
			answered > 0 && from+answered < len(plants) && !stop.Load() {
			from += answered
			continue
		}
		break
	}
	close(overwrites)
	wg.Wait()
	switch {
	case errors.Is(streamErr, client.ErrImportUnsupported):
		return counts{}, streamErr
	case streamErr != nil && firstErr == nil:
		firstErr = streamErr
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err() // interrupted
	}
	return res, firstErr
}
