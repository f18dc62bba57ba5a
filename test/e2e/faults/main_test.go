//go:build e2e

package faults

import (
	"fmt"
	"os"
	"testing"
)

// testbedLockEnv is what hack/lib/common.sh's testbed_lock exports once it holds the testbed
// lock: "shared" or "exclusive".
const testbedLockEnv = "ARGOEXEC_TESTBED_LOCK"

// TestMain runs the suite only while this run holds the testbed alone: its cases stop, kill
// and pause the components every other e2e run uses. hack/e2e-faults.sh (make e2e-faults) takes
// the lock exclusively; `go test -tags e2e` without it fails here, naming the way to run it.
// (hack/e2e.sh's own runs leave this package out.)
func TestMain(m *testing.M) {
	if got := os.Getenv(testbedLockEnv); got != "exclusive" {
		fmt.Fprintf(os.Stderr, "faults: %s=%q: the fault suite stops testbed components that other e2e runs use, so it runs only with the testbed held alone: run hack/e2e-faults.sh (make e2e-faults)\n", testbedLockEnv, got)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
