// Package buildinfo carries the version stamped into the binary at link time:
//
//	go build -ldflags "-X github.com/plantstore/plantstore/internal/buildinfo.Version=v1.2.3 \
//	  -X github.com/plantstore/plantstore/internal/buildinfo.Revision=abc123"
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set by -ldflags; the defaults describe a developer build.
var (
	Version  = "dev"
	Revision = ""
)

// Info is what /version answers and plantstore_build_info exports.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
}

// Get returns the stamped build information, falling back to the VCS revision
// the Go toolchain records when the binary was built without -ldflags.
func Get() Info {
	info := Info{Version: Version, Revision: Revision, GoVersion: runtime.Version()}
	if info.Revision == "" {
		info.Revision = vcsRevision()
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	return info
}

func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
