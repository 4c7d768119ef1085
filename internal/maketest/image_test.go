package maketest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKubernetesDocBuildsTheImageTheManifestsName: docs/kubernetes.md's
// build command, run in a clone (no release tag reachable), tags the image
// the manifests name; `make version` prints the tag `make docker-build`
// gives, which the doc uses for any other build; and the doc's commands
// need no program it does not list (kubectl's own kustomize, no separate
// kustomize; yq only as mikefarah's, named).
func TestKubernetesDocBuildsTheImageTheManifestsName(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(root(t), "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		blocks = append(blocks, m[1])
	}
	commands := strings.Join(blocks, "\n")
	if m := regexp.MustCompile(`(?m)^git checkout .*`).FindString(commands); m != "" {
		t.Errorf("the doc runs %q: a clone has no release tag to check out", m)
	}

	build := regexp.MustCompile(`(?m)^make docker-build VERSION=(\S+)`).FindStringSubmatch(commands)
	if build == nil {
		t.Fatal("docs/kubernetes.md has no `make docker-build VERSION=...` command")
	}
	tagged := regexp.MustCompile(`-t (\S+:\S+)`).FindAllStringSubmatch(dryRun(t, "docker-build", "VERSION="+build[1]), -1)
	var tags []string
	for _, m := range tagged {
		tags = append(tags, m[1])
	}
	for _, kustomization := range []string{"deploy/k8s/kustomization.yaml", "deploy/k8s/overlays/postgres/kustomization.yaml"} {
		b, err := os.ReadFile(filepath.Join(root(t), kustomization))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`newName: (\S+)\s+newTag: (\S+)`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("%s names no image", kustomization)
		}
		if image := m[1] + ":" + m[2]; tags == nil || tags[0] != image {
			t.Errorf("the doc's make docker-build VERSION=%s tags %q; %s names %s", build[1], tags, kustomization, image)
		}
	}

	// Without VERSION: the tag docker-build gives is what make version says.
	version := strings.TrimSpace(mustMake(t, "-s", "version"))
	if want := "-t plantstore:" + version + " "; !strings.Contains(dryRun(t, "docker-build"), want) {
		t.Errorf("make version says %q, but make docker-build does not tag %q", version, want)
	}

	for _, line := range strings.Split(commands, "\n") {
		if regexp.MustCompile(`(^|[|;&(]\s*)kustomize\s`).MatchString(line) {
			t.Errorf("the doc runs a separate kustomize (%q): use kubectl's", line)
		}
	}
	if strings.Contains(commands, "yq ") && !strings.Contains(string(doc), "mikefarah") {
		t.Error("the doc runs yq without saying which one (mikefarah's Go yq v4)")
	}
}
