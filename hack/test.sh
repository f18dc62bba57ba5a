#!/usr/bin/env bash
# Everything CI runs, in order: lint, unit tier, fuzz, e2e tier on the real cluster, make bench's smoke.
# The fault suite (make e2e-faults) is not here yet: k8sapi's watch gives up on the 403 a
# just-restarted API server answers before its RBAC caches fill, so its APIServerDown10s and
# EtcdCompactedAPIServerRestarted cases fail now and then (issue 12).
set -euo pipefail
cd "$(dirname "$0")/.."
hack/verify.sh
hack/unit.sh
FUZZTIME=${FUZZTIME:-10s} hack/fuzz.sh  # every fuzz target briefly (13 targets, about 3 min); make fuzz: 60s each
if [ -x hack/e2e.sh ]; then
  hack/e2e.sh
else
  echo "e2e tier: hack/e2e.sh not present yet; unit tier only" >&2
fi
hack/bench.sh --smoke  # make bench's harness, one repetition each, nothing written
