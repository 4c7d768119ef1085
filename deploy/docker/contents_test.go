package docker

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// engineFiles are the placeholders the engine adds to every container (it
// mounts the real ones at run time); they are not the image's.
var engineFiles = map[string]bool{"/.dockerenv": true, "/etc/hostname": true, "/etc/hosts": true, "/etc/resolv.conf": true}

// TestImageHasNothingToRunButPlantstore reads every file of the image: the
// one executable is /plantstore. Someone who gets code execution in the
// container finds no shell, no package manager and no tool to fetch more.
func TestImageHasNothingToRunButPlantstore(t *testing.T) {
	t.Parallel()
	tag := image(t)
	id := docker(t, "create", tag)
	t.Cleanup(func() { _, _ = runDocker(context.Background(), "rm", "--volumes", id) })

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	export := exec.CommandContext(ctx, "docker", "export", id)
	out, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	var executables, files []string
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("docker export: %v", err)
		}
		name := "/" + strings.TrimPrefix(path.Clean(h.Name), "./")
		if engineFiles[name] || strings.HasPrefix(name, "/dev/") {
			continue
		}
		files = append(files, name)
		if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 {
			executables = append(executables, name)
		}
		for _, tool := range []string{"sh", "bash", "ash", "dash", "busybox", "apt", "apt-get", "dpkg", "apk", "curl", "wget"} {
			if path.Base(name) == tool {
				t.Errorf("the image has %s", name)
			}
		}
	}
	if err := export.Wait(); err != nil {
		t.Fatalf("docker export: %v", err)
	}
	if len(files) < 10 {
		t.Fatalf("docker export listed %d files; the listing is not what this test expects: %q", len(files), files)
	}
	if len(executables) != 1 || executables[0] != "/plantstore" {
		t.Fatalf("executables in the image = %q, want only /plantstore", executables)
	}
}
