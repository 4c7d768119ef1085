package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// initdbArgs make every cluster's data directory. --no-sync: a throwaway
// cluster need not wait for initdb's files to reach the disk; the running
// server keeps fsync on.
var initdbArgs = []string{"-U", Superuser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"}

// initdb makes the cluster's data directory: a copy of one that initdb
// made once for every test process of this user and these binaries. initdb
// takes a second or more (several on a busy machine), a copy a fraction of
// one, and a test run starts a cluster per package and more; what the copy
// holds is exactly what initdb would write again.
func (c *Cluster) initdb() error {
	template, err := c.initdbTemplate()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// cp -a keeps the modes PostgreSQL checks and, run as root, the
	// server user's ownership.
	//nolint:gosec // G204: cp, with directories of our own
	if out, err := exec.CommandContext(ctx, "cp", "-a", template, c.dataDir()).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the initdb template %s: %v\n%s", template, err, out)
	}
	return nil
}

// initdbTemplate returns the data directory initdb made for these
// binaries, making it first if no test process did.
func (c *Cluster) initdbTemplate() (string, error) {
	initdb, err := os.Stat(filepath.Join(c.binDir, "initdb"))
	if err != nil {
		return "", err
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s %d %d %s", c.binDir, initdb.Size(), initdb.ModTime().UnixNano(), strings.Join(initdbArgs, " ")))
	parent := filepath.Join(os.TempDir(), fmt.Sprintf("plantstore-pgtest-%d", os.Geteuid()))
	template := filepath.Join(parent, hex.EncodeToString(key[:8]))
	if _, err := os.Stat(filepath.Join(template, "PG_VERSION")); err == nil {
		return template, nil
	}
	// Readable by the server's user, which runs initdb below.
	if err := os.MkdirAll(parent, 0o755); err != nil { //nolint:gosec // G301: holds nothing secret, the server's user must reach it
		return "", err
	}
	// In a shared temporary directory: it must be this user's own.
	if fi, err := os.Lstat(parent); err != nil {
		return "", err
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s is not a directory of this user's", parent)
	}
	tmp, err := os.MkdirTemp(parent, "initdb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // once renamed, nothing is left here
	if c.cred != nil {
		if err := os.Chown(tmp, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return "", err
		}
	}
	if err := c.run("initdb", append([]string{"-D", tmp}, initdbArgs...)...); err != nil {
		return "", err
	}
	// The rename makes the template whole at once; a process that made
	// one meanwhile won, and this one's is removed.
	if err := os.Rename(tmp, template); err != nil {
		if _, statErr := os.Stat(filepath.Join(template, "PG_VERSION")); statErr == nil {
			return template, nil
		}
		return "", fmt.Errorf("keep the initdb template: %w", err)
	}
	return template, nil
}
