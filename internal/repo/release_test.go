package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func readRootFile(t *testing.T, name string) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLicenseIsApache2 checks that LICENSE is the whole Apache License 2.0,
// from its title to the appendix, not a summary or a pointer to it.
func TestLicenseIsApache2(t *testing.T) {
	text := readRootFile(t, "LICENSE")
	for _, want := range []string{
		"Apache License\n                           Version 2.0, January 2004\n",
		"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"9. Accepting Warranty or Additional Liability.",
		"END OF TERMS AND CONDITIONS",
		"APPENDIX: How to apply the Apache License to your work.",
		`Licensed under the Apache License, Version 2.0 (the "License");`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("LICENSE lacks %q: it must be the full Apache-2.0 text", want)
		}
	}
}

// TestChangelog checks CHANGELOG.md's shape (Keep a Changelog): an
// Unreleased section first, then releases newest first, each with a date,
// each linked; and that LatestRelease reads the newest.
func TestChangelog(t *testing.T) {
	text := readRootFile(t, "CHANGELOG.md")
	headings := regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`).FindAllStringSubmatch(text, -1)
	if len(headings) < 2 || headings[0][1] != "Unreleased" {
		t.Fatalf("CHANGELOG.md headings %q, want [Unreleased] first and at least one release", headings)
	}
	for _, h := range headings[1:] {
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(h[1]) || !regexp.MustCompile(`^ - \d{4}-\d{2}-\d{2}$`).MatchString(h[2]) {
			t.Errorf("release heading %q, want ## [X.Y.Z] - YYYY-MM-DD", h[0])
		}
	}
	for _, h := range headings {
		if !strings.Contains(text, "\n["+h[1]+"]: ") {
			t.Errorf("CHANGELOG.md has no link for [%s]", h[1])
		}
	}
	latest, err := LatestRelease()
	if err != nil {
		t.Fatal(err)
	}
	if latest != headings[1][1] {
		t.Errorf("LatestRelease() = %q, want %q, the first release heading", latest, headings[1][1])
	}
}
