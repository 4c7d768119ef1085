package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/plantstore/plantstore/client"
)

// counts is what an import did, printed at its end.
type counts struct {
	Created     int64 `json:"created"`
	Unchanged   int64 `json:"unchanged"`
	Skipped     int64 `json:"skipped"`
	Overwritten int64 `json:"overwritten"`
	Failed      int64 `json:"failed"`
}

const importSynopsis = "plantstore import [-f FILE] [--workers N] [--on-conflict fail|skip|overwrite] [flags]\n\n" +
	"Creates the plants of an export (NDJSON, from stdin or FILE). The whole file is\n" +
	"checked first, with the server's own rules: a bad line stops the import, naming\n" +
	"the line, before any plant is sent. The plants then go in one stream to the\n" +
	"server's bulk create (one request a plant, --workers at once, to a server\n" +
	"without it). Run it again after an interruption: it resumes."

type importFlags struct {
	common
	file       string
	workers    int
	onConflict string
}

func newImportFlags(getenv func(string) string) (*flag.FlagSet, *importFlags) {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	f := &importFlags{}
	fs.StringVar(&f.file, "f", "", "read this file instead of stdin")
	fs.IntVar(&f.workers, "workers", 8, "concurrent requests: the overwrites of a bulk import, or every plant on a server without one")
	fs.StringVar(&f.onConflict, "on-conflict", "fail", "a different plant under an id: fail, skip or overwrite")
	f.register(fs, getenv)
	f.registerOutput(fs)
	return fs, f
}

// runImport is `plantstore import [-f FILE] [--workers N]
// [--on-conflict=fail|skip|overwrite]`. The whole file is read and checked
// first: a bad line stops the import with its number before a plant is
// sent. The plants then go in one stream to the bulk create (see
// importPlants), or one by one to a server without it (importEach). A
// plant already there (a resumed import) counts as unchanged, and a
// different plant under its id follows --on-conflict: fail stops the
// import (exit 1), skip leaves it, overwrite replaces it (PUT).
func runImport(ctx context.Context, args []string, stdio IO) int {
	fs, f := newImportFlags(stdio.Getenv)
	if code, ok := parse(fs, args, stdio, importSynopsis); !ok {
		return code
	}
	switch {
	case fs.NArg() != 0:
		return usageError(stdio.Stderr, "import", errors.New("takes no arguments"))
	case f.workers < 1:
		return usageError(stdio.Stderr, "import", fmt.Errorf("--workers %d: want at least 1", f.workers))
	case f.onConflict != "fail" && f.onConflict != "skip" && f.onConflict != "overwrite":
		return usageError(stdio.Stderr, "import", fmt.Errorf("--on-conflict %q: want fail, skip or overwrite", f.onConflict))
	}
	api, err := f.client()
	if err != nil {
		return usageError(stdio.Stderr, "import", err)
	}
	in := stdio.Stdin
	if f.file != "" {
		file, err := os.Open(f.file)
		if err != nil {
			return failed(stdio.Stderr, "import", err)
		}
		defer file.Close()
		in = file
	}
	plants, err := readNDJSON(in)
	if err != nil {
		return failed(stdio.Stderr, "import", fmt.Errorf("%w; nothing was imported", err))
	}
	res, err := importPlants(ctx, api, plants, f.workers, f.onConflict, stdio.Stderr)
	if errors.Is(err, client.ErrImportUnsupported) { // an older server: one request per plant
		res, err = importEach(ctx, api, plants, f.workers, f.onConflict, stdio.Stderr)
	}
	if perr := printCounts(stdio.Stdout, f.output, res); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return failed(stdio.Stderr, "import", err)
	}
	return exitOK
}

func printCounts(w io.Writer, format string, res counts) error {
	if format == "table" {
		_, err := fmt.Fprintf(w, "created %d, unchanged %d, skipped %d, overwritten %d, failed %d\n",
			res.Created, res.Unchanged, res.Skipped, res.Overwritten, res.Failed)
		return err
	}
	return newEncoder(w).Encode(res)
}

// importEach is the import for a server without the bulk create: it
// sends plants with n workers and stops at the first failure (the rest are
// not sent; what was sent stays, and a rerun resumes).
func importEach(ctx context.Context, api *client.Client, plants []client.Plant, n int, onConflict string, stderr io.Writer) (counts, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var created, unchanged, skipped, overwritten, failedN atomic.Int64
	var firstErr error
	var once sync.Once
	fail := func(err error) {
		once.Do(func() { firstErr = err; cancel() })
	}
	prog := startProgress(stderr, "imported", int64(len(plants)))
	work := make(chan client.Plant)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for p := range work {
				err := importOne(ctx, api, p, onConflict, &created, &unchanged, &skipped, &overwritten)
				if err != nil {
					if ctx.Err() == nil { // not one cut short by another's failure
						failedN.Add(1)
						fail(fmt.Errorf("plant %d: %w", p.ID, err))
					}
					continue
				}
				prog.add(1)
			}
		})
	}
feed:
	for _, p := range plants {
		select {
		case work <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	prog.finish()
	res := counts{Created: created.Load(), Unchanged: unchanged.Load(), Skipped: skipped.Load(),
		Overwritten: overwritten.Load(), Failed: failedN.Load()}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err() // interrupted
	}
	return res, firstErr
}

func importOne(ctx context.Context, api *client.Client, p client.Plant, onConflict string, created, unchanged, skipped, overwritten *atomic.Int64) error {
	stored, err := api.Get(ctx, p.ID)
	switch {
	case errors.Is(err, client.ErrNotFound):
		if err := api.Create(ctx, p); err != nil {
			return err
		}
		created.Add(1)
		return nil
	case err != nil:
		return err
	case samePlant(stored, p):
		unchanged.Add(1)
		return nil
	}
	switch onConflict {
	case "skip":
		skipped.Add(1)
		return nil
	case "overwrite":
		if _, err := api.Update(ctx, p, stored.ETag); err != nil {
			return err
		}
		overwritten.Add(1)
		return nil
	}
	return fmt.Errorf("%w: id already stored with a different name or tag (use --on-conflict=skip or overwrite)", client.ErrConflict)
}

func samePlant(a, b client.Plant) bool {
	if a.Name != b.Name || (a.Tag == nil) != (b.Tag == nil) {
		return false
	}
	return a.Tag == nil || *a.Tag == *b.Tag
}
