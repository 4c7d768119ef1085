package maketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/repo"
)

// TestVersionWithoutTags: a checkout where no tag is reachable (a clone
// without tags, as CI may make) stamps the latest release in CHANGELOG.md
// and the commit, not a bare commit hash; a tag wins once there is one.
func TestVersionWithoutTags(t *testing.T) {
	t.Parallel()
	release, err := repo.LatestRelease()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"Makefile", "CHANGELOG.md"} {
		b, err := os.ReadFile(filepath.Join(root(t), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=test", "-c", "user.email=test@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet")
	git("add", "Makefile", "CHANGELOG.md")
	git("commit", "--quiet", "-m", "a checkout without tags")
	short := git("rev-parse", "--short", "HEAD")

	if got, want := makeVariable(t, dir, "VERSION"), "v"+release+"-g"+short; got != want {
		t.Errorf("VERSION without a tag = %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := makeVariable(t, dir, "VERSION"), "-g"+short+"-dirty"; !strings.HasSuffix(got, want) {
		t.Errorf("VERSION without a tag, with changes = %q, want it to end in %q", got, want)
	}
	git("checkout", "--quiet", "CHANGELOG.md")
	git("tag", "v9.8.7")
	if got := makeVariable(t, dir, "VERSION"); got != "v9.8.7" {
		t.Errorf("VERSION at the tag v9.8.7 = %q, want v9.8.7", got)
	}
}
