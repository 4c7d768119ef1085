package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the binary's run with args against s and returns the exit code,
// stdout and stderr.
func runCLI(t *testing.T, s *testServer, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	// Flags may follow the id: ours go last.
	full := append(append([]string{}, args...), "--url", s.API, "--token", testToken)
	code := run(full, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func wantCLI(t *testing.T, s *testServer, code int, stdout, stderr string, args ...string) {
	t.Helper()
	gotCode, gotOut, gotErr := runCLI(t, s, args...)
	if gotCode != code || gotOut != stdout || gotErr != stderr {
		t.Fatalf("plantstore %s\n = exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q",
			strings.Join(args, " "), gotCode, gotOut, gotErr, code, stdout, stderr)
	}
}

func TestCLIPlants(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	wantCLI(t, s, 0, `{"id":1,"name":"Monstera","tag":"tropical"}`+"\n", "", "plants", "create", "1", "--name", "Monstera", "--tag", "tropical")
	wantCLI(t, s, 0, `{"id":-5,"name":"Fern <&>"}`+"\n", "", "plants", "create", "--name", "Fern <&>", "--", "-5")
	wantCLI(t, s, 1, "", "plantstore plants create: 409 Conflict: plant 1 already exists with a different name or tag\n",
		"plants", "create", "1", "--name", "other")
	code, out, _ := runCLI(t, s, "plants", "get", "1")
	if code != 0 || !strings.HasPrefix(out, `{"id":1,"name":"Monstera","tag":"tropical","etag":"\"`) {
		t.Fatalf("get = %d %q", code, out)
	}
	etag := strings.TrimSuffix(strings.TrimPrefix(out, `{"id":1,"name":"Monstera","tag":"tropical","etag":"\"`), "\\\"\"}\n")
	wantCLI(t, s, 0, "ID  NAME      TAG\n1   Monstera  \"tropical\"\n", "", "plants", "get", "1", "-o", "table")
	wantCLI(t, s, 0, `[{"id":-5,"name":"Fern <&>"},{"id":1,"name":"Monstera","tag":"tropical"}]`+"\n", "", "plants", "list")
	wantCLI(t, s, 0, `[{"id":-5,"name":"Fern <&>"}]`+"\n", "next page: plantstore plants list --limit 1 --after -5\n", "plants", "list", "--limit", "1")
	wantCLI(t, s, 0, `[{"id":1,"name":"Monstera","tag":"tropical"}]`+"\n", "", "plants", "list", "--tag", "tropical")
	code, out, _ = runCLI(t, s, "plants", "update", "1", "--name", "Monstera deliciosa", "--if-match", `"`+etag+`"`)
	if code != 0 || !strings.HasPrefix(out, `{"id":1,"name":"Monstera deliciosa","tag":"tropical","etag":`) {
		t.Fatalf("update = %d %q", code, out)
	}
	wantCLI(t, s, 1, "", "plantstore plants update: 412 Precondition Failed: plant 1 has changed: If-Match does not match its current ETag\n",
		"plants", "update", "1", "--name", "x", "--if-match", `"`+etag+`"`)
	wantCLI(t, s, 0, "", "", "plants", "delete", "1")
	wantCLI(t, s, 1, "", "plantstore plants get: 404 Not Found: plant 1 not found\n", "plants", "get", "1")

	// Usage errors: exit 2.
	wantCLI(t, s, 2, "", "plantstore plants create: --name is required\n", "plants", "create", "2")
	wantCLI(t, s, 2, "", "plantstore plants get: id \"x\" is not an int64\n", "plants", "get", "x")
	wantCLI(t, s, 2, "", "plantstore plants get: -o \"yaml\": want json or table\n", "plants", "get", "1", "-o", "yaml")
	wantCLI(t, s, 2, "", "plantstore plants: unknown verb \"grow\"; usage: plantstore plants create|get|list|update|delete|watch [flags]\n", "plants", "grow")
	wantCLI(t, s, 2, "", "plantstore import: --on-conflict \"merge\": want fail, skip or overwrite\n", "import", "--on-conflict", "merge")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plants", "get", "1", "--url", s.API}, &stdout, &stderr); code != 2 ||
		stderr.String() != "plantstore plants get: no token: set --token, --token-file or PLANTSTORE_TOKEN\n" {
		t.Fatalf("without a token: %d %q", code, stderr.String())
	}
}

// TestCLIEnvironment: PLANTSTORE_URL and PLANTSTORE_TOKEN stand in for
// --url and --token, and --token-file reads the token from a file.
func TestCLIEnvironment(t *testing.T) {
	s := startServer(t, testConfig(t))
	t.Setenv("PLANTSTORE_URL", s.API)
	t.Setenv("PLANTSTORE_TOKEN", testToken)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plants", "create", "7", "--name", "env"}, &stdout, &stderr); code != 0 {
		t.Fatalf("with the environment: %d %s", code, stderr.String())
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PLANTSTORE_TOKEN", "")
	stdout.Reset()
	if code := run([]string{"plants", "get", "7", "--token-file", tokenFile, "-o", "table"}, &stdout, &stderr); code != 0 ||
		stdout.String() != "ID  NAME  TAG\n7   env   -\n" {
		t.Fatalf("with --token-file: %d %q %s", code, stdout.String(), stderr.String())
	}
}
