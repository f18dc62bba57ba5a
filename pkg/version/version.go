// Package version describes the build: its semantic version and commit,
// stamped at link time by hack/build.sh, and the Go toolchain that built it.
//
//	go build -ldflags "-X github.com/argoexec/argoexec/pkg/version.Version=v0.1.0 \
//	  -X github.com/argoexec/argoexec/pkg/version.Commit=$(git rev-parse HEAD)"
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the semantic version of this build (hack/version.sh: the git
// tag, or the VERSION file with a -dev suffix), set by the linker. Unstamped
// builds (go build, go test) say DevVersion.
var Version = DevVersion

// Commit is the git commit this build was made from, set by the linker;
// when unset, the VCS revision Go recorded, if any.
var Commit = ""

// DevVersion is Version in a build the linker did not stamp.
const DevVersion = "v0.0.0-dev"

// Info is what a build says about itself.
type Info struct {
	// Version is the semantic version, e.g. v0.1.0 or v0.1.0-dev.gcf69768.
	Version string
	// Commit is the git commit, "unknown" when neither the linker nor Go recorded one.
	Commit string
	// GoVersion is the Go toolchain, e.g. go1.26.0.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Get returns this build's Info.
func Get() Info {
	return info(Version, Commit, debug.ReadBuildInfo)
}

func info(v, commit string, readBuildInfo func() (*debug.BuildInfo, bool)) Info {
	if commit == "" {
		commit = vcsRevision(readBuildInfo)
	}
	if v == "" {
		v = DevVersion
	}
	return Info{Version: v, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// vcsRevision is the revision go build recorded (-buildvcs), with
// "-dirty" for a modified tree, or "unknown".
func vcsRevision(readBuildInfo func() (*debug.BuildInfo, bool)) string {
	bi, ok := readBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "-dirty"
	}
	return rev
}

// String is the one line `NAME version` and `NAME --version` print:
// "v0.1.0 (commit cf69768..., go1.26.0, linux/amd64)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}

// Fields are the log fields of the first line init and wait log.
func (i Info) Fields() map[string]any {
	return map[string]any{"version": i.Version, "commit": i.Commit, "go": i.GoVersion}
}
