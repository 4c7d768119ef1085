package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"
)

// TestTokenFilesStayOutOfTheImage: the image is built from a checkout with
// token files in it (plantedTokens). Neither their names nor their values
// may be anywhere in the final image, nor in any layer of the build stage,
// which is where `COPY . .` puts the build context and what the classic
// builder keeps as its cache (built.stage: make docker-build removes its own
// copy of the stage after the build).
func TestTokenFilesStayOutOfTheImage(t *testing.T) {
	t.Parallel()
	final := image(t)
	for _, img := range []string{built.stage, final} {
		scanned := scanImage(t, img, func(layer, name string) {
			for planted := range plantedTokens {
				if name == "src/"+planted || strings.HasSuffix(name, "/"+planted) {
					t.Errorf("%s: layer %s has the planted token file %s", img, layer, name)
				}
			}
		}, func(layer, name, token string) {
			t.Errorf("%s: layer %s, file %s holds the planted token %s", img, layer, name, token)
		})
		if scanned < 1000 {
			t.Errorf("%s: docker save listed %d files; the listing is not what this test expects", img, scanned)
		}
	}
}

// saveTimeout bounds `docker save` and the scan of what it writes: the
// build stage is about 700 MB, which a busy machine with a slow storage
// driver (fuse-overlayfs) takes more than commandTimeout to read.
const saveTimeout = 10 * time.Minute

// scanImage reads `docker save` of img: every layer's every file name goes
// to onName, and every file whose content holds a planted token value to
// onToken. It returns how many files it read.
func scanImage(t *testing.T, img string, onName func(layer, name string), onToken func(layer, name, token string)) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	save := exec.CommandContext(ctx, "docker", "save", img)
	out, err := save.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	save.Stderr = &stderr
	if err := save.Start(); err != nil {
		t.Fatal(err)
	}
	files := 0
	finder := newTokenFinder()
	archive := tar.NewReader(out)
	for {
		h, err := archive.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("docker save %s: %v", img, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		// Layers are tar files (layer.tar, or a blob in the OCI layout of
		// newer engines); the rest is configuration and manifests.
		r := bufio.NewReaderSize(archive, 1<<20)
		if !isTar(r) {
			if token := finder.find(r); token != "" {
				onToken(h.Name, h.Name, token)
			}
			continue
		}
		layer := tar.NewReader(r)
		for {
			f, err := layer.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("docker save %s, layer %s: %v", img, h.Name, err)
			}
			files++
			name := strings.TrimPrefix(path.Clean(f.Name), "./")
			onName(h.Name, name)
			if f.Typeflag == tar.TypeReg {
				if token := finder.find(layer); token != "" {
					onToken(h.Name, name, token)
				}
			}
		}
	}
	if err := save.Wait(); err != nil {
		t.Fatalf("docker save %s: %v: %s", img, err, stderr.String())
	}
	return files
}

// isTar tells a tar stream by the ustar magic of its first header.
func isTar(r *bufio.Reader) bool {
	head, err := r.Peek(265)
	return err == nil && string(head[257:262]) == "ustar"
}

// tokenFinder finds the planted token values in what it reads. Its buffers
// are reused from file to file: an image has tens of thousands of files,
// most of them small, and two fresh megabytes for each cost minutes.
type tokenFinder struct {
	tokens     [][]byte
	longest    int
	buf, chunk []byte
}

func newTokenFinder() *tokenFinder {
	f := &tokenFinder{chunk: make([]byte, 1<<20)}
	for _, token := range plantedTokens {
		f.tokens = append(f.tokens, []byte(token))
		f.longest = max(f.longest, len(token))
	}
	return f
}

// find returns the first planted token value r holds, reading it in chunks
// that overlap by a token's length, so that one split across two chunks is
// found too.
func (f *tokenFinder) find(r io.Reader) string {
	buf := f.buf[:0]
	defer func() { f.buf = buf[:0] }()
	for {
		n, err := r.Read(f.chunk)
		buf = append(buf, f.chunk[:n]...)
		for _, token := range f.tokens {
			if bytes.Contains(buf, token) {
				return string(token)
			}
		}
		if len(buf) > f.longest {
			buf = append(buf[:0], buf[len(buf)-f.longest:]...)
		}
		if err != nil {
			return ""
		}
	}
}
