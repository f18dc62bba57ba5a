#!/usr/bin/env bash
# Fuzz every parser of input that a pod, a user or a remote end controls: each
# Go fuzz target (func FuzzXxx in a *_fuzz_test.go) runs for FUZZTIME (default
# 60s; make test passes less). Targets are found with `go test -list`, so a new
# one runs without editing this file. Prints a table of executions per second.
#
# A crasher is written by go test to testdata/fuzz/FuzzXxx/ beside its target;
# fix the parser and commit the file as a regression case. Every target still
# runs; the script fails at the end, naming the targets that failed. A failure
# that is only Go 1.26's -fuzztime race (golang/go#75804: "context deadline
# exceeded", no input written) is shown as "ok (go#75804)", not a failure.
#
#   FUZZTIME           time (or Nx, N executions) per target    60s
#   FUZZMINIMIZETIME   executions (Nx) or time to minimise each  100x
#                      new input (go's 60s default is most of a short run:
#                      9 execs/s instead of 800 for FuzzCopyFile; set 60s to
#                      shrink a crasher before committing it)
#   FUZZPARALLEL       fuzzing workers per target                GOMAXPROCS
#   FUZZRUN            regexp: only targets whose name matches   all
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-60s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-100x}
FUZZRUN=${FUZZRUN:-.}

# "pkg target" pairs, from one go test -list over every package with a
# *_fuzz_test.go: it prints each package's fuzz functions, then "ok  <pkg>".
mapfile -t pkgs < <(find . -name '*_fuzz_test.go' -not -path './.*' -printf '%h\n' | sort -u)
module=$(go list -m)
targets=()
names=()
while read -r first second _; do
  if [ "$first" = ok ]; then
    for n in "${names[@]}"; do
      targets+=("${second#"$module"/} $n")
    done
    names=()
  elif [[ $first =~ ^Fuzz ]] && [[ $first =~ $FUZZRUN ]]; then
    names+=("$first")
  fi
done < <(go test -list '^Fuzz' "${pkgs[@]}")
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no target matches FUZZRUN=$FUZZRUN" >&2
  exit 1
fi

# deadline_race OUT NAME: go test's output is the failure golang/go#75804 makes: NAME failed,
# and the one line under its "--- FAIL" is "context deadline exceeded".
deadline_race() {
  local out=$1 name=$2
  grep -A2 -- "^--- FAIL: $name " "$out" | sed -n 2,3p | paste -sd '|' | grep -qx '    context deadline exceeded|FAIL'
}

# inputs DIR: how many inputs DIR (a target's testdata/fuzz corpus) holds.
inputs() { { find "$1" -type f 2>/dev/null || true; } | wc -l; }

parallel=()
if [ -n "${FUZZPARALLEL:-}" ]; then
  parallel=(-parallel "$FUZZPARALLEL")
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
failed=()
rows=()
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "fuzz: $name ($pkg) for $FUZZTIME" >&2
  out="$log/$name.out"
  corpus="$pkg/testdata/fuzz/$name"
  before=$(inputs "$corpus")
  if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" \
    "${parallel[@]}" "./$pkg" >"$out" 2>&1; then
    status=ok
  elif [ "$(inputs "$corpus")" = "$before" ] && deadline_race "$out" "$name"; then
    # Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a failure
    # (golang/go#75804, fixed in Go 1.27): "--- FAIL" with only "context deadline exceeded"
    # and no input written. A crasher or a hang always writes its input under testdata/fuzz.
    status="ok (go#75804)"
    echo "fuzz: $name: go test failed with only 'context deadline exceeded' at the end of -fuzztime and wrote no input: Go's own race (golang/go#75804), not a finding" >&2
  else
    status=FAIL
    failed+=("$name")
    cat "$out" >&2
  fi
  # The last progress line: "fuzz: elapsed: 1m0s, execs: 12436 (0/sec), ...".
  last=$(grep -o 'elapsed: [0-9hms.]*, execs: [0-9]*' "$out" | tail -n1 || true)
  execs=${last##* }
  elapsed=${last#elapsed: }
  elapsed=${elapsed%%,*}
  secs=0
  if [[ $elapsed =~ ^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?$ ]]; then
    secs=$(( ${BASH_REMATCH[2]:-0} * 3600 + ${BASH_REMATCH[4]:-0} * 60 + ${BASH_REMATCH[6]:-0} ))
  fi
  rate=-
  if [ -n "$execs" ] && [ "$secs" -gt 0 ]; then
    rate=$(( execs / secs ))
  fi
  rows+=("$(printf '%-24s %-28s %10s %8s %8s  %s' "$name" "$pkg" "${execs:--}" "${elapsed:--}" "$rate" "$status")")
done

printf '%-24s %-28s %10s %8s %8s  %s\n' target package execs elapsed execs/s result
printf '%s\n' "${rows[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (the failing inputs are under testdata/fuzz/ beside each target)" >&2
  exit 1
fi
