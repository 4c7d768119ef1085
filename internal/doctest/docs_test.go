package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/repo"
)

func root(t *testing.T) string {
	t.Helper()
	dir, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userDocs are the documents written for users, relative to the root.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"README.md"}
	for _, d := range docs {
		names = append(names, filepath.Join("docs", filepath.Base(d)))
	}
	return names
}

// repoPath is a path into the repository as a document writes it: in
// backticks, a link or a command, starting at a top-level directory of the
// repository or climbing out of the document's own with ../.
var repoPath = regexp.MustCompile("(?:^|[\\s`(\\[\"'=])((?:\\.\\./)+[A-Za-z0-9_.-][A-Za-z0-9_./-]*|(?:api|client|cmd|deploy|docs|internal|modules|scripts|tools)/[A-Za-z0-9_./-]*)")

// TestDocsNameOnlyFilesInTheRepository: every file or directory a user
// document points at is in the repository; a reader cannot run a script
// that is somewhere else.
func TestDocsNameOnlyFilesInTheRepository(t *testing.T) {
	top := root(t)
	for _, doc := range userDocs(t) {
		for _, m := range repoPath.FindAllStringSubmatch(read(t, doc), -1) {
			p := strings.TrimRight(m[1], ".,;:)")
			if p == "" || strings.HasSuffix(p, "/") && strings.Trim(p, "./") == "" {
				continue
			}
			base := top
			if strings.HasPrefix(p, "../") {
				base = filepath.Join(top, filepath.Dir(doc))
			}
			abs := filepath.Join(base, p)
			if rel, err := filepath.Rel(top, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s names %s, outside the repository", doc, p)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s names %s, which is not in the repository", doc, p)
			}
		}
	}
}

// section is the text of doc from the heading to the next heading of the
// same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	text := read(t, doc)
	level := strings.Count(strings.Fields(heading)[0], "#")
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no heading %q", doc, heading)
	}
	rest := text[start+len(heading)+2:]
	next := regexp.MustCompile(`(?m)^#{1,` + string(rune('0'+level)) + `} `).FindStringIndex(rest)
	if next != nil {
		rest = rest[:next[0]]
	}
	return rest
}

// shellBlocks are the ```sh blocks of text, with continued lines joined.
func shellBlocks(text string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, strings.ReplaceAll(m[1], "\\\n", " "))
	}
	return blocks
}

// makeDefault is the default of a `NAME ?= value` variable of the Makefile.
func makeDefault(t *testing.T, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(\S+)`).FindStringSubmatch(read(t, "Makefile"))
	if m == nil {
		t.Fatalf("the Makefile has no default for %s", name)
	}
	return m[1]
}

// TestWebhooksRecipeStaysOutOfTheWay: docs/webhooks.md's "Trying it
// locally" runs beside `make run` (other ports, another data directory),
// on the loopback interface only (the development token is public), and
// every file it writes, the webhooks file with its secret among them, is
// one git ignores.
func TestWebhooksRecipeStaysOutOfTheWay(t *testing.T) {
	recipe := strings.Join(shellBlocks(section(t, "docs/webhooks.md", "## Trying it locally")), "\n")
	setting := func(name string) string {
		m := regexp.MustCompile(`\b` + name + `=(\S+)`).FindStringSubmatch(recipe)
		if m == nil {
			t.Errorf("the recipe does not set %s: its default is make run's, or every interface", name)
			return ""
		}
		return m[1]
	}
	for name, makes := range map[string]string{
		"PLANTSTORE_HTTP_ADDR":  makeDefault(t, "HTTP_ADDR"),
		"PLANTSTORE_ADMIN_ADDR": makeDefault(t, "ADMIN_ADDR"),
	} {
		addr := setting(name)
		if addr != "" && (!strings.HasPrefix(addr, "127.0.0.1:") || addr == makes) {
			t.Errorf("the recipe's %s=%s: want a loopback address other than make run's %s", name, addr, makes)
		}
	}
	var written []string
	if dir := setting("PLANTSTORE_DATA_DIR"); dir != "" {
		if filepath.Clean(dir) == filepath.Clean(makeDefault(t, "DATA_DIR")) {
			t.Errorf("the recipe's data directory %s is make run's", dir)
		}
		written = append(written, filepath.Join(dir, "plants.db"))
	}
	for _, m := range regexp.MustCompile(`>\s*([^\s&|;]+)`).FindAllStringSubmatch(recipe, -1) {
		if m[1] != "/dev/null" && !strings.HasPrefix(m[1], "&") {
			written = append(written, m[1])
		}
	}
	if len(written) < 2 {
		t.Fatalf("the recipe writes %q: want the webhooks file and the data", written)
	}
	for _, f := range written {
		if strings.HasPrefix(f, "/tmp/") {
			continue
		}
		cmd := exec.Command("git", "-C", root(t), "check-ignore", "--no-index", "-q", f)
		if err := cmd.Run(); err != nil {
			t.Errorf("the recipe writes %s, which git does not ignore (git check-ignore: %v)", f, err)
		}
	}
	for _, m := range regexp.MustCompile(`webhookecho[^\n]*`).FindAllString(recipe, -1) {
		if !strings.Contains(m, "-addr 127.0.0.1:") {
			t.Errorf("the recipe's receiver %q: want it on a loopback address it names", m)
		}
	}
}

// TestInstallLineHasEveryPackage: the README's one apt-get line installs
// every Debian package that .ci/run installs for the tests.
func TestInstallLineHasEveryPackage(t *testing.T) {
	line := regexp.MustCompile(`(?m)^sudo apt-get install .*$`).FindString(read(t, "README.md"))
	if line == "" {
		t.Fatal("README.md has no `sudo apt-get install` line")
	}
	have := strings.Fields(line)
	needs := regexp.MustCompile(`need\+=\(([a-z0-9.+-]+)\)`).FindAllStringSubmatch(read(t, ".ci/run"), -1)
	if len(needs) == 0 {
		t.Fatal(".ci/run installs no package with need+=(...)")
	}
	for _, n := range needs {
		if !slices.Contains(have, n[1]) {
			t.Errorf("README's %q lacks %s, which .ci/run installs for the tests", line, n[1])
		}
	}
}

// TestDockerRunLeavesNoContainerBehind: every `docker run` of the README and
// the Makefile that names its container also removes it when it stops, so
// that the next run under that name (make docker-run after the README's)
// does not fail on a stopped container.
func TestDockerRunLeavesNoContainerBehind(t *testing.T) {
	for _, file := range []string{"README.md", "Makefile"} {
		text := strings.ReplaceAll(read(t, file), "\\\n", " ")
		runs := regexp.MustCompile(`docker run [^\n]*`).FindAllString(text, -1)
		if len(runs) == 0 {
			t.Errorf("%s has no docker run", file)
		}
		for _, run := range runs {
			if strings.Contains(run, "--name") && !strings.Contains(run, "--rm") {
				t.Errorf("%s: %q names its container but does not remove it (--rm)", file, run)
			}
		}
	}
}

// TestComposeSectionNamesTheImagesScript: the README's Compose section
// tells a machine that cannot pull how to get the images it names.
func TestComposeSectionNamesTheImagesScript(t *testing.T) {
	text := read(t, "README.md")
	start := strings.Index(text, "**Several replicas with Docker Compose.**")
	end := strings.Index(text, "**Docker.**")
	if start < 0 || end < start {
		t.Fatal("README.md has no Compose paragraph before the Docker one")
	}
	if !strings.Contains(text[start:end], "scripts/compose-images.sh") {
		t.Error("the README's Compose section does not mention scripts/compose-images.sh")
	}
}

// TestTokensFileOwnerDocumented: the README's Docker section says the image
// reads the tokens file as uid 65532, and how to let it.
func TestTokensFileOwnerDocumented(t *testing.T) {
	text := read(t, "README.md")
	start := strings.Index(text, "**Docker.**")
	if start < 0 {
		t.Fatal("README.md has no Docker paragraph")
	}
	docker := strings.Join(strings.Fields(text[start:]), " ")
	for _, want := range []string{"uid 65532", "chown 65532 secrets/tokens", "cannot read the file: permission denied"} {
		if !strings.Contains(docker, want) {
			t.Errorf("the README's Docker section does not say %q", want)
		}
	}
}

// TestNoSecretOnACommandLine: no command of a user document's shell blocks
// takes a webhook secret (a whsec_ literal or $secret) as an argument,
// which ps shows to every user of the machine: only the shell's own
// printf and echo, which start no process, and assignments may hold one.
func TestNoSecretOnACommandLine(t *testing.T) {
	secret := regexp.MustCompile(`whsec_|\$\{?secret\b`)
	builtin := regexp.MustCompile(`^(printf|echo)\b|^[A-Za-z_][A-Za-z0-9_]*=`)
	checked := 0
	for _, doc := range userDocs(t) {
		for _, block := range shellBlocks(read(t, doc)) {
			for _, line := range strings.Split(block, "\n") {
				line, _, _ = strings.Cut(line, " #") // a comment is not a command
				for _, command := range regexp.MustCompile(`\|\|?|;|&&?|\$\(`).Split(line, -1) {
					command = strings.TrimSpace(command)
					if !secret.MatchString(command) {
						continue
					}
					checked++
					if !builtin.MatchString(command) {
						t.Errorf("%s: %q puts a secret on a command line; read it from a file instead", doc, command)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no shell block of the user documents handles a secret: the walk-through of docs/webhooks.md does")
	}
}
