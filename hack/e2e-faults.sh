#!/usr/bin/env bash
# hack/e2e-faults.sh — the fault suite (package test/e2e/faults, build tag e2e): each case stops,
# kills or pauses one testbed component (hack/cluster.sh kill|pause|up COMPONENT) while argoexec
# wait waits or saves, and checks the outputs are intact or the step failed naming the fault.
#
#   hack/e2e-faults.sh [go test flags...]      e.g. hack/e2e-faults.sh -run 'TestFaults/k8sapi/APIServer'
#
# It is hack/e2e.sh with the testbed held alone (ARGOEXEC_E2E_EXCLUSIVE=1: it waits for every
# other e2e run, blocks them while it runs, and restores the testbed before it lets go). The
# package's TestMain refuses to run without that lock (ARGOEXEC_TESTBED_LOCK=exclusive), and
# hack/e2e.sh's default packages leave it out.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export ARGOEXEC_E2E_EXCLUSIVE=1 ARGOEXEC_E2E_TAGS=e2e ARGOEXEC_E2E_PKGS=./test/e2e/faults
export ARGOEXEC_E2E_TIMEOUT=${ARGOEXEC_E2E_TIMEOUT:-25m}
exec hack/e2e.sh "$@"
