package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/plantstore/plantstore/client"
)

// runExport is `plantstore export [-f FILE]`: every plant as NDJSON, one
// {"id","name","tag"?} object a line, in id order, walked page by page
// with the client's iterator. An export of an unchanged store is the same
// bytes each time, which is what makes a backup checkable.
func runExport(ctx context.Context, args []string, stdio IO) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	var c common
	c.register(fs, stdio.Getenv)
	file := fs.String("f", "", "write to this file instead of stdout")
	if code, ok := parse(fs, args, stdio.Stderr); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(stdio.Stderr, "export", errors.New("takes no arguments"))
	}
	api, err := c.client()
	if err != nil {
		return usageError(stdio.Stderr, "export", err)
	}
	out := stdio.Stdout
	var f *os.File
	if *file != "" {
		if f, err = os.Create(*file); err != nil {
			return failed(stdio.Stderr, "export", err)
		}
		out = f
	}
	if err := export(ctx, api, out, stdio.Stderr); err != nil {
		if f != nil {
			_ = f.Close() // the export failed already; that error is the one to report
		}
		return failed(stdio.Stderr, "export", err)
	}
	if f != nil {
		// Sync: a backup that is not on disk is not a backup.
		if err := errors.Join(f.Sync(), f.Close()); err != nil {
			return failed(stdio.Stderr, "export", err)
		}
	}
	return exitOK
}

func export(ctx context.Context, api *client.Client, out, stderr io.Writer) error {
	w := bufio.NewWriterSize(out, 64<<10)
	enc := newEncoder(w)
	prog := startProgress(stderr, "exported", 0)
	defer prog.finish()
	for p, err := range api.All(ctx, client.ListOptions{Limit: 1000}) {
		if err != nil {
			return err
		}
		if err := enc.Encode(record{ID: p.ID, Name: p.Name, Tag: p.Tag}); err != nil {
			return err
		}
		prog.add(1)
	}
	return w.Flush()
}
