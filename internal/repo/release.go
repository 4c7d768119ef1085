package repo

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
)

// releaseHeading is a released version's heading in CHANGELOG.md, in Keep a
// Changelog's form: "## [0.1.0] - 2026-11-24". "## [Unreleased]" is not one.
var releaseHeading = regexp.MustCompile(`(?m)^## \[([0-9][^\]]*)\]`)

// LatestRelease is the newest released version in CHANGELOG.md, the first
// release heading, without a leading v ("0.1.0"). The Makefile stamps it on
// builds from a checkout without tags, and deploy/k8s names its image.
func LatestRelease() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md")) //nolint:gosec // G304: the repository's own file
	if err != nil {
		return "", err
	}
	m := releaseHeading.FindSubmatch(b)
	if m == nil {
		return "", errors.New("CHANGELOG.md has no release heading such as \"## [0.1.0] - 2026-11-24\"")
	}
	return string(m[1]), nil
}
