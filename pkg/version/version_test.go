package version

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// semver is semver.org's regular expression, with the leading v Go uses.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

func buildInfo(settings ...string) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		bi := &debug.BuildInfo{}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi, true
	}
}

func TestInfo(t *testing.T) {
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name, version, commit string
		read                  func() (*debug.BuildInfo, bool)
		wantVersion, wantCmt  string
	}{
		{"stamped", "v0.1.0", "abc123", noInfo, "v0.1.0", "abc123"},
		{"stamped commit wins over Go's", "v0.1.0", "abc123", buildInfo("vcs.revision", "def456"), "v0.1.0", "abc123"},
		{"Go's revision", DevVersion, "", buildInfo("vcs.revision", "def456", "vcs.modified", "false"), DevVersion, "def456"},
		{"Go's revision, modified tree", DevVersion, "", buildInfo("vcs.revision", "def456", "vcs.modified", "true"), DevVersion, "def456-dirty"},
		{"no revision recorded", DevVersion, "", buildInfo("-trimpath", "true"), DevVersion, "unknown"},
		{"no build info", DevVersion, "", noInfo, DevVersion, "unknown"},
		{"empty version stamped", "", "abc", noInfo, DevVersion, "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := info(tc.version, tc.commit, tc.read)
			if got.Version != tc.wantVersion || got.Commit != tc.wantCmt || got.GoVersion != runtime.Version() || got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
				t.Errorf("info = %+v, want version %s commit %s", got, tc.wantVersion, tc.wantCmt)
			}
		})
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v0.1.0", Commit: "abc", GoVersion: "go1.26.0", Platform: "linux/arm64"}
	if got, want := i.String(), "v0.1.0 (commit abc, go1.26.0, linux/arm64)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	f := i.Fields()
	if f["version"] != "v0.1.0" || f["commit"] != "abc" || f["go"] != "go1.26.0" {
		t.Errorf("Fields() = %v", f)
	}
}

func TestDevVersionIsSemver(t *testing.T) {
	if !semver.MatchString(DevVersion) {
		t.Errorf("DevVersion %q is not a semantic version", DevVersion)
	}
	for _, bad := range []string{"dev", "cf69768", "v1.2", "v01.2.3", "v1.2.3-01"} {
		if semver.MatchString(bad) {
			t.Errorf("the semver pattern accepts %q", bad)
		}
	}
}

// TestVersionScript runs hack/version.sh, which hack/build.sh stamps with:
// in this checkout, and with VERSION alone outside git, it must print a
// semantic version and a commit.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	file, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		env         []string
		wantVersion string // empty: any semantic version
	}{
		{"this tree", nil, ""},
		{"outside git", []string{"GIT_DIR=/nonexistent"}, "v" + strings.TrimSpace(string(file)) + "-dev"},
		{"forced", []string{"VERSION=v1.2.3", "COMMIT=abc"}, "v1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("bash", "../../hack/version.sh")
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("hack/version.sh: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 2 || !semver.MatchString(lines[0]) || lines[1] == "" {
				t.Errorf("hack/version.sh printed %q, want a semantic version and a commit", out)
			}
			if tc.wantVersion != "" && lines[0] != tc.wantVersion {
				t.Errorf("version %q, want %q", lines[0], tc.wantVersion)
			}
		})
	}
}
