package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argoexec/argoexec/pkg/version"
)

// TestVersion: `argoexec version` and `argoexec --version` print the same
// line: the version, the commit and the Go version.
func TestVersion(t *testing.T) {
	want := "argoexec " + version.Get().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, IO{Out: &out, Err: &errOut, Getenv: envOf(nil)}); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if out.String() != want {
			t.Errorf("%v printed %q, want %q", args, out.String(), want)
		}
		for _, part := range []string{version.Get().Version, "commit " + version.Get().Commit, version.Get().GoVersion} {
			if !strings.Contains(out.String(), part) {
				t.Errorf("%v printed %q: no %q", args, out.String(), part)
			}
		}
	}
}

// TestStepsLogVersionFirst: the first line init and wait log carries the
// version, the commit and the Go version, before the step runs.
func TestStepsLogVersionFirst(t *testing.T) {
	for _, cmd := range []string{"init", "wait"} {
		t.Run(cmd, func(t *testing.T) {
			var errOut bytes.Buffer
			ranAfterLog := false
			check := func() { ranAfterLog = errOut.Len() > 0 }
			err := run(context.Background(), []string{"--log-format", "json", cmd}, IO{Out: &bytes.Buffer{}, Err: &errOut, Getenv: envOf(baseEnv())}, runners{
				init: func(context.Context, *InitOptions) error { check(); return nil },
				wait: func(context.Context, *WaitOptions) error { check(); return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if !ranAfterLog {
				t.Fatalf("%s logged nothing before it ran", cmd)
			}
			first, _, _ := strings.Cut(errOut.String(), "\n")
			var line map[string]any
			if err := json.Unmarshal([]byte(first), &line); err != nil {
				t.Fatalf("first log line %q: %v", first, err)
			}
			v := version.Get()
			if line["version"] != v.Version || line["commit"] != v.Commit || line["go"] != v.GoVersion || line["cmd"] != cmd {
				t.Errorf("first log line = %v, want version %s, commit %s, go %s, cmd %s", line, v.Version, v.Commit, v.GoVersion, cmd)
			}
		})
	}
}
