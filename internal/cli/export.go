package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plantstore/plantstore/client"
)

const exportSynopsis = "plantstore export [-f FILE] [flags]\n\n" +
	"Writes every plant as NDJSON, in id order, to stdout or to FILE. FILE is replaced\n" +
	"only once the whole export is on disk: a failed export leaves it as it was."

type exportFlags struct {
	common
	file string
}

func newExportFlags(getenv func(string) string) (*flag.FlagSet, *exportFlags) {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	f := &exportFlags{}
	fs.StringVar(&f.file, "f", "", "write to this file instead of stdout (replaced only when the export succeeds)")
	f.register(fs, getenv)
	return fs, f
}

// runExport is `plantstore export [-f FILE]`: every plant as NDJSON, one
// {"id","name","tag"?} object a line, in id order, walked page by page
// with the client's iterator. An export of an unchanged store is the same
// bytes each time, which is what makes a backup checkable.
func runExport(ctx context.Context, args []string, stdio IO) int {
	fs, f := newExportFlags(stdio.Getenv)
	if code, ok := parse(fs, args, stdio, exportSynopsis); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(stdio.Stderr, "export", errors.New("takes no arguments"))
	}
	api, err := f.client()
	if err != nil {
		return usageError(stdio.Stderr, "export", err)
	}
	if f.file == "" {
		err = export(ctx, api, stdio.Stdout, stdio.Stderr)
	} else {
		err = exportFile(ctx, api, f.file, stdio.Stderr)
	}
	if err != nil {
		return failed(stdio.Stderr, "export", err)
	}
	return exitOK
}

// exportFile exports into path without ever destroying what path holds:
// the plants go to a temporary file in path's directory, which is synced
// and then renamed over path, and the directory synced, only when the
// whole export succeeded. A failure (a wrong token, a server failing
// mid-walk, an interrupt, a full disk) leaves path as it was and removes
// the temporary file. The file keeps an existing path's permissions; a new
// one is readable by its owner only, as a copy of the data should be.
func exportFile(ctx context.Context, api *client.Client, path string, stderr io.Writer) (err error) {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved // replace the file a link points to, not the link
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close() // closed already after a successful write
			_ = os.Remove(tmp.Name())
		}
	}()
	if info, statErr := os.Stat(path); statErr == nil {
		if err := tmp.Chmod(info.Mode().Perm()); err != nil {
			return err
		}
	} else if !errors.Is(statErr, fs.ErrNotExist) {
		return statErr
	}
	if err := export(ctx, api, tmp, stderr); err != nil {
		return fmt.Errorf("%w (%s is unchanged)", err, path)
	}
	// Sync before the rename: a backup that is not on disk is not a backup,
	// and a rename that reaches the disk before the data would replace the
	// old file with an empty one after a crash.
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // G304: the directory of the user's own -f
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
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
