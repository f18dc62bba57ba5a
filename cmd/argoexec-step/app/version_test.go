package app

import (
	"bytes"
	"context"
	"testing"

	"github.com/argoexec/argoexec/pkg/version"
)

// TestVersion: `argoexec-step version` and `--version` print the
// version, commit and Go version on one line.
func TestVersion(t *testing.T) {
	want := "argoexec-step " + version.Get().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), args, IO{Out: &out, Err: &errOut}); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if out.String() != want {
			t.Errorf("%v printed %q, want %q", args, out.String(), want)
		}
	}
}
