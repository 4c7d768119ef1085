// Package repo finds the repository's root, for tests and tools that read
// the project's own files (the Dockerfile, the manifests).
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root is the directory of go.mod, found upwards from the working directory
// (a test's package directory).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
