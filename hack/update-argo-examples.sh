#!/usr/bin/env bash
# hack/update-argo-examples.sh — Argo Workflows v3.3.8's examples, as testdata: every *.yaml and
# *.yml under the module's examples/ (what pkg/apis/workflow's TestDecodeArgoExamples decodes),
# copied byte for byte into pkg/apis/workflow/testdata/argo-examples/, so that `go test ./...`
# reads them from the repository and needs nothing but the Go module proxy for go.mod's own
# modules (the Argo module is not one of them).
#
#   hack/update-argo-examples.sh           rewrite the testdata from the module
#   hack/update-argo-examples.sh --check   fail if the testdata differs from the module
#                                          (hack/verify.sh, make test); when the module cannot
#                                          be downloaded, say so and pass
#
# The module comes from the Go module proxy into the module cache (go mod download, run outside
# this module so that go.mod and go.sum stay as they are). SOURCE in the testdata names the
# module and the h1: hash of its zip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ARGO_MODULE=github.com/argoproj/argo-workflows/v3@v3.3.8
DEST=pkg/apis/workflow/testdata/argo-examples

mode=update
case ${1:-} in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# field NAME: a string field of go mod download -json's object
field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$json"; }
if ! json=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$ARGO_MODULE" 2>"$tmp/err"); then
  why="$(field Error) $(cat "$tmp/err")"
  if [ $mode = check ]; then
    echo "argo examples: SKIPPED the check of $DEST against the module: go mod download $ARGO_MODULE failed: $why" >&2
    exit 0
  fi
  echo "argo examples: go mod download $ARGO_MODULE failed: $why" >&2
  exit 1
fi
dir=$(field Dir)
sum=$(field Sum)
[ -d "$dir/examples" ] || { echo "argo examples: $dir/examples missing after go mod download $ARGO_MODULE" >&2; exit 1; }

want=$tmp/argo-examples
mkdir -p "$want"
(cd "$dir/examples" && find . -type f \( -name '*.yaml' -o -name '*.yml' \) -print0) |
  while IFS= read -r -d '' f; do
    mkdir -p "$want/$(dirname "$f")"
    cp --no-preserve=mode,ownership "$dir/examples/$f" "$want/$f"
  done
printf '%s %s\nexamples/**/*.yaml and *.yml, copied by hack/update-argo-examples.sh; do not edit\n' "$ARGO_MODULE" "$sum" >"$want/SOURCE"

files=$(find "$want" -type f \( -name '*.yaml' -o -name '*.yml' \) | wc -l)
bytes=$(find "$want" -type f \( -name '*.yaml' -o -name '*.yml' \) -printf '%s\n' | awk '{n += $1} END {print n + 0}')
if [ $mode = check ]; then
  if ! diff -r "$want" "$DEST" >"$tmp/diff" 2>&1; then
    echo "argo examples: $DEST differs from $ARGO_MODULE's examples/ (run hack/update-argo-examples.sh):" >&2
    head -n 40 "$tmp/diff" >&2
    exit 1
  fi
  echo "argo examples: $DEST matches $ARGO_MODULE ($files files, $bytes bytes)"
  exit 0
fi
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
cp -r "$want" "$DEST"
echo "argo examples: wrote $DEST from $ARGO_MODULE ($files files, $bytes bytes)"
