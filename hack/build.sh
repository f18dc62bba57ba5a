#!/usr/bin/env bash
# Builds static, reproducible binaries of argoexec, argoexec-main and argoexec-step into
# ${OUT:-bin/}. The version and commit (hack/version.sh) are stamped with -ldflags -X. argoexec-main is
# ./cmd/argoexec built with the tag argoexec_main: the resource and data templates' own flows,
# which argoexec hands those two commands to (their libraries would make every wait bigger).
# GOFLAGS=-tags=bench builds an argoexec whose init and wait can profile their CPU
# (ARGOEXEC_CPU_PROFILE; the tag bench, which also compiles the e2e tier's figures).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bin}
{ read -r VERSION; read -r COMMIT; } < <(hack/version.sh)
mkdir -p "$OUT"
build() { # OUTPUT PACKAGE [go build flags...]
  local out=$1 pkg=$2
  shift 2
  CGO_ENABLED=0 go build -trimpath -buildvcs=false "$@" \
    -ldflags "-s -w -X github.com/argoexec/argoexec/pkg/version.Version=${VERSION} -X github.com/argoexec/argoexec/pkg/version.Commit=${COMMIT}" \
    -o "$OUT/$out" "$pkg"
}
build argoexec ./cmd/argoexec
build argoexec-main ./cmd/argoexec -tags argoexec_main
build argoexec-step ./cmd/argoexec-step
built=$(find "$OUT" -maxdepth 1 -type f -printf '%f ')
echo "built ${built}in $OUT/ (version $VERSION)"
