// Package version holds the build's version, set at link time with
// -ldflags "-X github.com/argoexec/argoexec/pkg/version.Version=...".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release or git description of this build; "dev" when not
// set by the linker.
var Version = "dev"

// String describes the build: version, Go version, platform and VCS revision
// when the build recorded one.
func String() string {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				rev = " " + s.Value
			}
		}
	}
	return fmt.Sprintf("%s%s %s %s/%s", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
