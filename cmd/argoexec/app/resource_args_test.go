package app

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/argoexec/argoexec/executor/resource"
)

// TestResourceWithoutAction: `argoexec resource` without an ACTION is a
// usage error naming every action, not cobra's "accepts 1 arg(s)".
func TestResourceWithoutAction(t *testing.T) {
	for _, args := range [][]string{{"resource"}, {"resource", "create", "apply"}} {
		err := run(context.Background(), args, IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: envOf(baseEnv())}, runners{
			resource: func(context.Context, *ResourceOptions) error { t.Fatal("resource ran"); return nil },
		})
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "want one of get, create, apply, delete, replace, patch") {
			t.Errorf("%v: err = %v (exit %d), want a usage error naming the actions", args, err, ExitCode(err))
		}
	}
	if !slices.Equal(resourceActions, resource.Actions()) {
		t.Errorf("resourceActions = %v, executor/resource has %v", resourceActions, resource.Actions())
	}
}
