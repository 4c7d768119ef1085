package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// TestCLIWebhooks: plantstore webhooks create, list, rotate and delete
// against a real server; each secret goes to its --secret-file (mode
// 0600, never overwritten), never to stdout or stderr; the deliveries
// verify with the secret the file holds.
func TestCLIWebhooks(t *testing.T) {
	t.Parallel()
	fileSecret := webhookstest.NewSecret()
	s := startServer(t, webhooksAPIConfig(t, plants.StoreBolt, webhookstest.NewReceiver(t, fileSecret), fileSecret))
	rcv := webhookstest.NewReceiver(t, webhookstest.NewSecret())
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")

	code, out, errOut := runCLI(t, s, "webhooks", "create", "--endpoint-url", rcv.URL, "--format", "envelope",
		"--events", "plant.created,plant.deleted", "--description", "the shop", "--secret-file", first)
	if code != 0 || errOut != "" {
		t.Fatalf("create = exit %d, stderr %q", code, errOut)
	}
	var ep endpointResource
	if err := json.Unmarshal([]byte(out), &ep); err != nil || ep.Source != "api" || ep.URL != rcv.URL ||
		strings.Join(ep.Events, ",") != "plant.created,plant.deleted" || len(ep.Secrets) != 1 {
		t.Fatalf("create printed %q (%v)", out, err)
	}
	secret := readSecretFile(t, first)
	if strings.Contains(out, strings.TrimPrefix(secret, "whsec_")) {
		t.Fatal("create printed the secret")
	}
	if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != 200 {
		t.Fatalf("create plant = %d", r.Status)
	}
	verifyWith(t, awaitDelivery(t, rcv, 1), secret)

	// The secret file is never overwritten: the command stops before
	// asking the API.
	wantCLI(t, s, 2, "", "plantstore webhooks rotate: --secret-file: open "+first+": file exists\n",
		"webhooks", "rotate", ep.ID, "--secret-file", first)
	code, out, errOut = runCLI(t, s, "webhooks", "rotate", ep.ID, "--overlap", "1h", "--secret-file", second)
	if code != 0 || errOut != "" || !strings.Contains(out, `"expires_at"`) {
		t.Fatalf("rotate = exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	rotated := readSecretFile(t, second)
	if rotated == secret || strings.Contains(out, strings.TrimPrefix(rotated, "whsec_")) {
		t.Fatal("rotate printed its secret, or gave the old one")
	}

	code, out, _ = runCLI(t, s, "webhooks", "list")
	var listed []endpointResource
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 2 || listed[0].ID != "crm" || listed[1].ID != ep.ID {
		t.Fatalf("list = exit %d, %q", code, out)
	}
	for _, sec := range []string{secret, rotated, fileSecret} {
		if strings.Contains(out, strings.TrimPrefix(sec, "whsec_")) {
			t.Fatal("list printed a secret")
		}
	}
	wantCLI(t, s, 1, "", `plantstore webhooks delete: 409 Conflict: the endpoint "crm" comes from the webhooks file, read-only through the API: change the file`+"\n",
		"webhooks", "delete", "crm")
	wantCLI(t, s, 0, "", "", "webhooks", "delete", ep.ID)
	wantCLI(t, s, 1, "", `plantstore webhooks delete: 404 Not Found: no webhook endpoint "`+ep.ID+`"`+"\n", "webhooks", "delete", ep.ID)
	wantCLI(t, s, 2, "", "plantstore webhooks create: --secret-file is required: the secret is written there, never printed\n",
		"webhooks", "create", "--endpoint-url", rcv.URL)
}

func readSecretFile(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", path, info.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}
