#!/usr/bin/env bash
# Builds static, reproducible binaries of argoexec and workflow-controller into
# ${OUT:-bin/}. The version is `git describe`, stamped with -ldflags -X.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bin}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
mkdir -p "$OUT"
for cmd in argoexec workflow-controller; do
  [ -d "cmd/$cmd" ] || continue
  CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/argoexec/argoexec/pkg/version.Version=${VERSION}" \
    -o "$OUT/$cmd" "./cmd/$cmd"
done
built=$(find "$OUT" -maxdepth 1 -type f -printf '%f ')
echo "built ${built}in $OUT/ (version $VERSION)"
