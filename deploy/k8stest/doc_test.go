package k8stest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plantstore/plantstore/internal/repo"
)

// docBlock returns the shell block of docs/kubernetes.md that follows the
// marker <!-- doc-test: name ... -->: the test runs what the reader copies.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- doc-test: " + regexp.QuoteMeta(name) + "[ \\-][^\\n]*\\n```sh\\n(.*?)\\n```")
	m := re.FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/kubernetes.md has no <!-- doc-test: %s --> marker before a ```sh block", name)
	}
	return string(m[1])
}

// TestDocCommands runs the commands of docs/kubernetes.md, as they stand,
// with a real kubectl against the control plane: create the namespace and
// the token Secret, apply the default variant, wait for its rollout, then
// rotate the tokens; then switch the namespace to the CloudNativePG overlay
// and wait for the database and the rollout. The doc cannot drift from the manifests or from
// kubectl. A stand-in kubelet reports the pods ready (no kubelet runs
// here), so that `kubectl rollout status` returns.
func TestDocCommands(t *testing.T) {
	c := newCluster(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	// The reader's directory: the repository's deploy/ and a tokens.txt of
	// its own, never the repository's.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(dir, "deploy")); err != nil {
		t.Fatal(err)
	}
	const ns = "plantstore" // the doc's
	c.cp.RunPods(t, ns)
	t.Cleanup(func() {
		_ = c.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})

	run := func(t *testing.T, block string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"PATH="+c.cp.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+c.cp.Kubeconfig)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("$ %s\n%s%s", strings.ReplaceAll(block, "\n", "\n$ "), stdout.String(), stderr.String())
		if err != nil {
			t.Fatalf("the doc's commands failed: %v\n%s", err, stderr.String())
		}
		// kubectl prints the API server's warnings, and its own, as
		// "Warning: ..." on stderr.
		if strings.Contains(stderr.String(), "Warning") || strings.Contains(stderr.String(), "warning") {
			t.Errorf("the doc's commands drew a warning:\n%s", stderr.String())
		}
	}
	secretTokens := func(t *testing.T) string {
		t.Helper()
		s, err := c.cs.CoreV1().Secrets(ns).Get(context.Background(), "plantstore-tokens", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(s.Data["tokens"])
	}
	fileTokens := func(t *testing.T) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "tokens.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	run(t, docBlock(t, "default"))
	if got, want := secretTokens(t), fileTokens(t); got != want || len(strings.TrimSpace(want)) != 64 {
		t.Errorf("Secret tokens %q, tokens.txt %q (want one 64-digit token)", got, want)
	}
	namespace, err := c.cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"enforce": "restricted", "warn": "restricted", "audit": "restricted"} {
		if got := namespace.Labels["pod-security.kubernetes.io/"+k]; got != v {
			t.Errorf("namespace label pod-security.kubernetes.io/%s = %q, want %q", k, got, v)
		}
	}
	if pods := c.pods(t, ns); len(pods) != 1 {
		t.Errorf("%d pods after the rollout, want 1", len(pods))
	}

	// Rotation, step 1: a second token next to the first, then the doc's
	// command.
	newToken := make([]byte, 32)
	_, _ = rand.Read(newToken)
	f, err := os.OpenFile(filepath.Join(dir, "tokens.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintln(f, hex.EncodeToString(newToken))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	run(t, docBlock(t, "rotate"))
	if got, want := secretTokens(t), fileTokens(t); got != want || strings.Count(want, "\n") != 2 {
		t.Errorf("after the rotation: Secret tokens %q, tokens.txt %q (want two tokens)", got, want)
	}

	// The CloudNativePG section, in the same namespace: leave the default
	// variant, then apply the overlay and wait as the doc says. The
	// operator cannot run here (nothing runs pods): its Cluster CRD is
	// installed, and a stand-in reports the Cluster Ready for the block's
	// kubectl wait, as the stand-in kubelet reports the pods.
	needCRDs(t, c, cloudNativePG)
	run(t, docBlock(t, "leave-default"))
	if pvcs, err := c.cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(pvcs.Items) != 0 {
		t.Errorf("after leaving the default variant: PersistentVolumeClaims %v, %v; want none", pvcs, err)
	}
	standInOperator(t, c, ns, "plantstore-db")
	run(t, docBlock(t, "cloudnative-pg"))
	d, err := c.cs.AppsV1().Deployments(ns).Get(context.Background(), "plantstore", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var url string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "PLANTSTORE_POSTGRES_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			url = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if url != "plantstore-db-app/uri" {
		t.Errorf("after the CloudNativePG section, PLANTSTORE_POSTGRES_URL from %q, want plantstore-db-app/uri", url)
	}
	if d.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("strategy %q: the Deployment is still the default variant's", d.Spec.Strategy.Type)
	}
}
