//go:build !argoexec_main

package app

import (
	"strings"
	"testing"
)

// TestExecMainNeedsTheBinary: outside an image (here, beside the test
// binary) argoexec-main is missing, and `argoexec resource|data` says where
// it looked and what to use, instead of running without it.
func TestExecMainNeedsTheBinary(t *testing.T) {
	err := execMain("resource")
	if err == nil || !strings.Contains(err.Error(), "argoexec-main is not installed beside") || !strings.Contains(err.Error(), "hack/images.sh or the Dockerfile") {
		t.Fatalf("execMain = %v", err)
	}
}
