#!/usr/bin/env bash
# hack/bench.sh — make bench: every figure of BENCHMARKS.md's generated block from one run of
# TestBench (test/e2e/bench_test.go, build tags e2e,bench) on the testbed, ours beside Argo
# v3.3.8's own argoexec. The tag bench holds every figure of the e2e tier (test/e2e/bench_test.go
# and test/e2e/*_bench_test.go, each `//go:build e2e && bench`); the plain e2e tier compiles none.
#
#   hack/bench.sh           the full run: rewrites the block between the make-bench markers of
#                           BENCHMARKS.md and the charts in docs/bench/; takes the testbed alone
#                           (its CPU figures count every client of the API server and kubelet)
#   hack/bench.sh --smoke   one repetition each, small sizes, nothing written (make test)
#
# It runs through hack/e2e.sh, which brings the testbed up (unless ARGOEXEC_E2E_SKIP_UP=1),
# builds and imports the images, starts Argo's controllers, exports the tests' environment and
# takes the testbed lock (shared for --smoke, exclusive for the full run); the tags come from
# ARGOEXEC_E2E_TAGS=e2e,bench.
# Sizes (TestBench's doc comment): ARGOEXEC_BENCH_REPS, _BIG_REPS, _BIG_MIB, _COPY_MIB,
# _CONCURRENCY, _CONC_MIB; each keeps a value already in the environment.
set -euo pipefail
# shellcheck source=hack/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"

mode=full
if [ "${1:-}" = --smoke ]; then mode=smoke; shift; fi
if [ $mode = full ]; then
  export ARGOEXEC_BENCH_REPS=${ARGOEXEC_BENCH_REPS:-10} ARGOEXEC_BENCH_BIG_REPS=${ARGOEXEC_BENCH_BIG_REPS:-3}
  export ARGOEXEC_BENCH_BIG_MIB=${ARGOEXEC_BENCH_BIG_MIB:-1024} ARGOEXEC_BENCH_COPY_MIB=${ARGOEXEC_BENCH_COPY_MIB:-16,256}
  export ARGOEXEC_BENCH_CONCURRENCY=${ARGOEXEC_BENCH_CONCURRENCY:-20,50} ARGOEXEC_BENCH_CONC_MIB=${ARGOEXEC_BENCH_CONC_MIB:-64}
  export ARGOEXEC_BENCH_OUT=${ARGOEXEC_BENCH_OUT:-$REPO_ROOT/BENCHMARKS.md}
  export ARGOEXEC_E2E_EXCLUSIVE=${ARGOEXEC_E2E_EXCLUSIVE:-1}
else
  export ARGOEXEC_BENCH_REPS=1 ARGOEXEC_BENCH_BIG_REPS=1 ARGOEXEC_BENCH_BIG_MIB=16 ARGOEXEC_BENCH_COPY_MIB=16
  export ARGOEXEC_BENCH_CONCURRENCY=2 ARGOEXEC_BENCH_CONC_MIB=8
  unset ARGOEXEC_BENCH_OUT
fi
# "ours" under Argo's controller is the controller's --executor-image, $ARGO_OURS_IMAGE
# (argoexec:dev unless set): it is left as it is, since a restart of that shared controller by
# one tree is undone by the next tree's run (TestBench records the image's argoexec version).
export ARGOEXEC_BENCH_COMMAND="make bench (hack/bench.sh: REPS=$ARGOEXEC_BENCH_REPS BIG_REPS=$ARGOEXEC_BENCH_BIG_REPS BIG_MIB=$ARGOEXEC_BENCH_BIG_MIB COPY_MIB=$ARGOEXEC_BENCH_COPY_MIB CONCURRENCY=$ARGOEXEC_BENCH_CONCURRENCY CONC_MIB=$ARGOEXEC_BENCH_CONC_MIB)"

t0=$(now_ms)
rc=0
ARGOEXEC_E2E_TAGS=e2e,bench ARGOEXEC_E2E_TIMEOUT=${ARGOEXEC_E2E_TIMEOUT:-45m} "$HACK_DIR/e2e.sh" -run '^TestBench$' "$@" || rc=$?
log "make bench ($mode): $(( ($(now_ms) - t0) / 1000 )) s, exit $rc"
exit $rc
