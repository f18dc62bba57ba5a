#!/usr/bin/env bash
# Everything CI runs, in order: lint (with the check that the Argo examples under testdata are
# the module's), unit tier, fuzz, e2e tier on the real cluster (build tag e2e: no figures), the
# fault suite (it holds the testbed alone and restores it), make bench's smoke (build tags
# e2e,bench: TestBench once, small sizes, nothing written).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/verify.sh
hack/unit.sh
FUZZTIME=${FUZZTIME:-10s} hack/fuzz.sh  # every fuzz target briefly (13 targets, about 3 min); make fuzz: 60s each
if [ -x hack/e2e.sh ]; then
  hack/e2e.sh
  hack/e2e-faults.sh  # about 100 s: one component at a time killed, paused or restarted mid-wait
else
  echo "e2e tier: hack/e2e.sh not present yet; unit tier only" >&2
fi
hack/bench.sh --smoke  # make bench's harness, one repetition each, nothing written
