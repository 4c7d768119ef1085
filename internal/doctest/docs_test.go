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

// TestCountedCommandsAreCounted: where a user document announces a number
// of commands ("Two commands:"), the shell block that follows holds that
// many.
func TestCountedCommandsAreCounted(t *testing.T) {
	numbers := map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
	announced := regexp.MustCompile("(?is)\\b(one|two|three|four|five|six) commands?:\\s*\n\\s*```sh\n(.*?)```")
	found := 0
	for _, doc := range userDocs(t) {
		for _, m := range announced.FindAllStringSubmatch(read(t, doc), -1) {
			found++
			var commands int
			for _, line := range strings.Split(strings.ReplaceAll(m[2], "\\\n", " "), "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
					commands++
				}
			}
			if commands != numbers[strings.ToLower(m[1])] {
				t.Errorf("%s announces %q commands and lists %d:\n%s", doc, m[1], commands, m[2])
			}
		}
	}
	if found == 0 {
		t.Error(`no user document announces its commands ("Two commands:"): the README's quick start does`)
	}
}

// TestSecretsAreUpdatedOneWay: every document updates a Secret that
// `kubectl create` made with `kubectl replace` (apply warns about such an
// object's missing last-applied-configuration), so that the rotation of
// docs/kubernetes.md and the move's freeze of docs/operations.md agree.
func TestSecretsAreUpdatedOneWay(t *testing.T) {
	update := regexp.MustCompile(`create secret [^\n]*--dry-run=client -o yaml \| kubectl (?:-n \S+ )?(\w+) -f -`)
	found := 0
	for _, doc := range userDocs(t) {
		text := strings.ReplaceAll(read(t, doc), "\\\n", " ")
		text = regexp.MustCompile(` +`).ReplaceAllString(text, " ")
		for _, m := range update.FindAllStringSubmatch(text, -1) {
			found++
			if m[1] != "replace" {
				t.Errorf("%s updates a Secret with kubectl %s: %q; the documents use replace", doc, m[1], m[0])
			}
		}
	}
	if found < 3 {
		t.Errorf("%d Secret updates found, want the rotation and the move's freeze and thaw", found)
	}
}

// TestDeletingTheDefaultVariantPointsAtTheMove: wherever docs/kubernetes.md
// runs or names `delete -k deploy/k8s`, which deletes the bolt data with
// its PersistentVolumeClaim, the paragraph before it says so and links the
// move of docs/operations.md that keeps the plants.
func TestDeletingTheDefaultVariantPointsAtTheMove(t *testing.T) {
	const move = "(operations.md#moving-from-the-bolt-replica-to-the-postgres-overlay)"
	if !strings.Contains(read(t, "docs/operations.md"), "\n## Moving from the bolt replica to the postgres overlay\n") {
		t.Fatal("docs/operations.md has no heading for the move the link names")
	}
	text := read(t, "docs/kubernetes.md")
	found := 0
	for _, at := range regexp.MustCompile(`delete -k deploy/k8s\b`).FindAllStringIndex(text, -1) {
		found++
		// The paragraph that holds it, or the one before its block.
		start := strings.LastIndex(text[:at[0]], "\n\n")
		if strings.HasPrefix(text[start+2:], "```") || strings.HasPrefix(text[start+2:], "<!--") {
			start = strings.LastIndex(text[:start], "\n\n")
		}
		end := strings.Index(text[at[1]:], "\n\n")
		if end < 0 {
			end = len(text) - at[1]
		}
		paragraph := text[start : at[1]+end]
		if !strings.Contains(paragraph, move) || !strings.Contains(paragraph, "bolt data") {
			t.Errorf("docs/kubernetes.md's %q is not preceded by a warning that it deletes the bolt data and a link to %s:\n%s", "delete -k deploy/k8s", move, paragraph)
		}
	}
	if found == 0 {
		t.Fatal("docs/kubernetes.md never deletes the default variant")
	}
}

// TestTheMovesProbeReadsOnePage: docs/operations.md's "wait until the move
// token works", run as it stands with a plantstore that records how it was
// called, asks for one page of one plant (`plants list --limit 1`, which
// reads that page alone), once it succeeds, and stops there.
func TestTheMovesProbeReadsOnePage(t *testing.T) {
	m := regexp.MustCompile(`\n(until [^\n]*; done)`).FindStringSubmatch(read(t, "docs/operations.md"))
	if m == nil {
		t.Fatal("docs/operations.md's move has no `until ...; done` probe")
	}
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	fake := "#!/bin/sh\necho \"$*\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "plantstore"), []byte(fake), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", m[1])
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the probe failed: %v\n%s", err, out)
	}
	got, err := os.ReadFile(calls)
	if want := "plants list --limit 1\n"; err != nil || string(got) != want {
		t.Errorf("the probe ran plantstore %q (%v), want %q: one page of one plant, once", got, err, want)
	}
}
